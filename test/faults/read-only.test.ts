/**
 * A database that has turned read-only (a standby, a demoted primary):
 * writes answer 503 to be retried, never 500; reads go on; once the database
 * takes writes again so does the server, without a restart. The CLI names
 * the database's own error.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { cliPath } from "../support/server-process.js";
import { expectTableInvariants } from "./support.js";

const run = promisify(execFile);

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await setReadOnly(false).catch(() => undefined);
  await t?.close();
});

/** Turns the test's own database read-only (or back) and ends its sessions so new ones take the setting. */
async function setReadOnly(on: boolean): Promise<void> {
  const client = new pg.Client({ connectionString: t.url });
  await client.connect();
  try {
    await client.query("SET default_transaction_read_only = off"); // this session must write the setting back
    const name = (await client.query("SELECT current_database() AS d")).rows[0].d as string;
    await client.query(`ALTER DATABASE "${name}" SET default_transaction_read_only = ${on ? "on" : "off"}`);
    await client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
  } finally {
    await client.end();
  }
}

const newProvider = () => ({ body: { name: `ro-${newUuid()}` } });

describe("read-only database", () => {
  it("answers writes 503 with Retry-After, serves reads, and recovers without a restart", async () => {
    expect((await t.request("POST", "/resource_providers", newProvider())).status).toBe(200);
    await setReadOnly(true);
    // The first request may meet a terminated session (a 503 too); after that every session is read-only.
    await t.request("GET", "/resource_providers");
    const refused = await t.request("POST", "/resource_providers", newProvider());
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(refused.body.errors[0].detail).not.toMatch(/read-only|INSERT|25006/);
    expect((await t.request("GET", "/resource_providers")).status).toBe(200);

    const migrate = await run(process.execPath, [cliPath, "db", "migrate"], { env: { ...process.env, DATABASE_URL: t.url } }).catch((e) => e);
    expect(migrate.code).toBe(1);
    expect(migrate.stderr).toMatch(/^placement: .*\n {2}cause: cannot execute .* in a read-only transaction \(25006\)\n$/);

    await setReadOnly(false);
    await t.request("GET", "/resource_providers");
    expect((await t.request("POST", "/resource_providers", newProvider())).status).toBe(200);
    await expectTableInvariants(t.url);
  });
});
