/**
 * The server's PostgreSQL connections terminated again and again (what a
 * database restart, a failover or a pooler reset does) while clients
 * schedule, migrate and query candidates: no process exits, every answer is
 * 2xx, 409 or 503, and nothing acknowledged is lost.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { checkInvariants } from "../../bench/faults/invariants.js";
import { databaseName, repeatedly, terminateBackends } from "../../bench/faults/inject.js";
import { Workload } from "../../bench/faults/workload.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

let db: TestDatabase;
let server: ServerProcess;
beforeAll(async () => {
  db = await createTestDatabase();
  server = await startServerProcess({ DATABASE_URL: db.url, PLACEMENT_WORKERS: "2", PLACEMENT_DB_POOL_SIZE: "6", LOG_LEVEL: "warn" });
});
afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

describe("backends terminated under load", () => {
  it("keeps every process up, answers 2xx/409/503 only, and loses nothing acknowledged", async () => {
    const work = new Workload({ baseUrls: [server.baseUrl], hangAfterMs: 20_000 });
    await work.createProviders(6);
    const faultsDone = new Promise((r) => setTimeout(r, 8_000));
    const [, terminated] = await Promise.all([
      work.run(12, faultsDone),
      repeatedly(() => terminateBackends(inject("adminDatabaseUrl"), databaseName(db.url)), 150, 400, faultsDone),
    ]);

    expect(terminated.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    const outcomes = Object.fromEntries(work.outcomes());
    for (const outcome of Object.keys(outcomes)) expect(["200", "204", "409", "503"], JSON.stringify(outcomes)).toContain(outcome);
    expect(outcomes["204"]).toBeGreaterThan(0);
    expect(outcomes["503"], "the faults reached requests").toBeGreaterThan(0);

    // No worker died: none was replaced, and the server still answers.
    expect(server.output()).not.toMatch(/worker exited/);
    expect(server.child.exitCode).toBeNull();
    expect((await fetch(`${server.baseUrl}/resource_providers`, { headers: { "x-auth-token": "admin" } })).status).toBe(200);

    const report = await checkInvariants(db.url, work.ledger);
    expect(report).toMatchObject({ overCapacity: [], usageDrift: [], emptyConsumers: [], ledgerMismatches: [] });
    expect(report.consumersChecked).toBeGreaterThan(0);
  });
});
