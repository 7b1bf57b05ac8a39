/**
 * `placement db migrate` from several processes at once through a real
 * PgBouncer 1.18 in transaction mode, onto an empty database, round after
 * round. With a session advisory lock the lock was taken on one server
 * connection and "released" on another, so it stayed behind on a pooled
 * connection and the next migrate waited forever. The migration's lock is now
 * transaction-scoped: every run exits 0 within the CLI's bound, the journal
 * is applied once, and no advisory lock is left on any server connection.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/net.js";
import { migrationsFolder } from "../../src/db/migrate.js";
import { runPlacement } from "../support/cli-process.js";
import { pgBouncerMissing, type PgBouncer } from "../support/clusters.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { ownSql } from "../faults/support.js";
import { bouncerForTestDatabases, through } from "./support.js";

const unavailable = pgBouncerMissing();
if (unavailable) console.warn(`PgBouncer migrate tests skipped: ${unavailable}`);

let bouncer: PgBouncer;
let database: TestDatabase;

describe.skipIf(unavailable !== undefined)("db migrate through PgBouncer in transaction mode", () => {
  beforeAll(async () => {
    // Two server connections for three migrators: each one's statements land on connections the others used.
    bouncer = await bouncerForTestDatabases(await freePort(), 2);
    database = await createTestDatabase({ migrated: false });
  }, 60_000);

  afterAll(async () => {
    await bouncer?.stop();
    await database?.drop();
  });

  it("three at once, three rounds: every run succeeds, nothing hangs, the journal is applied once", async () => {
    const url = through(bouncer, database.url);
    const env = { DATABASE_URL: url, PLACEMENT_DB_POOLER: "transaction" };
    for (let round = 0; round < 3; round++) {
      // runPlacement kills a run after 60 s (code -1): a hung migrate fails here, it does not hang the test.
      const runs = await Promise.all([0, 1, 2].map(() => runPlacement(["db", "migrate"], env)));
      expect(runs.map((r) => ({ code: r.code, stderr: r.stderr }))).toEqual(runs.map(() => ({ code: 0, stderr: expect.any(String) })));
    }
    const sql = ownSql(database.url);
    const journal = JSON.parse(readFileSync(path.join(migrationsFolder(), "meta/_journal.json"), "utf8")) as { entries: unknown[] };
    const [{ n }] = await sql<{ n: number }>("SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations");
    expect(n).toBe(journal.entries.length);
    // PgBouncer keeps its server connections open: a leaked session lock would still be held by one of them.
    const locks = await sql("SELECT pid, objid FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())");
    expect(locks).toEqual([]);
    const status = await runPlacement(["db", "version"], env);
    expect(status.code, status.stderr).toBe(0);
  });
});
