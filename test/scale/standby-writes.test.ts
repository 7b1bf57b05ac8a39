/**
 * The server pointed at a real hot standby by mistake (pg_basebackup -R of a
 * primary made here): reads answer, writes answer 503 with a detail that says
 * the database takes no writes (never a 500, never SQL), and
 * `placement db migrate` exits 1 naming PostgreSQL's own cause, 25006.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/net.js";
import { createApp, type PlacementApp } from "../../src/app.js";
import { testConfig } from "../../src/config.js";
import { openDatabase, sessionLimits, type Database } from "../../src/db/database.js";
import { runMigrations } from "../../src/db/migrate.js";
import { createLogger } from "../../src/log.js";
import { createMetrics } from "../../src/observe/metrics.js";
import { runPlacement } from "../support/cli-process.js";
import { clusterToolsMissing, startPrimary, startStandby, waitForReplay, type Cluster } from "../support/clusters.js";

const unavailable = clusterToolsMissing();
if (unavailable) console.warn(`standby tests skipped: ${unavailable}`);

const DB = "pooler_standby";

let primary: Cluster;
let standby: Cluster;
let onStandby: Database;
let placement: PlacementApp | undefined;

const request = (method: string, path: string, body?: unknown) =>
  placement!.app.request(path, {
    method,
    headers: { "x-auth-token": "admin", accept: "application/json", "openstack-api-version": "placement latest", "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe.skipIf(unavailable !== undefined)("pointed at a hot standby", () => {
  beforeAll(async () => {
    primary = await startPrimary({ port: await freePort() });
    await primary.query(`CREATE DATABASE ${DB}`);
    const migrator = openDatabase(primary.urlFor(DB), 1, createLogger("silent"));
    await runMigrations(migrator.pool);
    await migrator.close();
    standby = await startStandby(primary, { port: await freePort() });
    await waitForReplay(primary, standby);
    const config = testConfig({ DATABASE_URL: standby.urlFor(DB) });
    const log = createLogger("silent");
    onStandby = openDatabase(standby.urlFor(DB), 4, log, sessionLimits(config));
    placement = await createApp({ db: onStandby.db, config, log, metrics: createMetrics() });
  }, 120_000);

  afterAll(async () => {
    await placement?.close();
    await onStandby?.close();
    await standby?.stop();
    await primary?.stop();
  });

  it("serves reads and answers writes 503, saying the database takes no writes", async () => {
    expect((await request("GET", "/resource_providers")).status).toBe(200);
    const refused = await request("POST", "/resource_providers", { name: "on-a-standby" });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    const detail = (await refused.json()).errors[0].detail as string;
    expect(detail).toMatch(/takes no writes: it is a standby/);
    expect(detail).not.toMatch(/INSERT|25006|resource_providers/);
  });

  it("db migrate exits 1 with the read-only transaction as its cause, not the failed query", async () => {
    // A migration still to apply: the standby's journal row for it is removed on the primary and replayed.
    await primary.query("DELETE FROM drizzle.__drizzle_migrations WHERE id = (SELECT max(id) FROM drizzle.__drizzle_migrations)", [], DB);
    await waitForReplay(primary, standby);
    const run = await runPlacement(["db", "migrate"], { DATABASE_URL: standby.urlFor(DB) });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cause: cannot execute [A-Z ]+ in a read-only transaction \(25006\)/);
    expect(run.stderr).not.toMatch(/Failed query/);
  });
});
