/**
 * Every wait on the database is bounded and answered in Placement's format:
 * a write blocked on a row lock another session holds, a request waiting for
 * a pooled connection, a request whose connection is terminated, and the
 * handler deadline. Afterwards nothing of the request is left holding locks
 * or a transaction, and a retry with the same consumer generation gets the
 * right answer (204 if the first attempt did not commit, 409 if it did).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { claimBody, createProvider, usedOn } from "../allocations/fixtures.js";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { expectTableInvariants, holdProviderLock, ownSql, waitFor } from "./support.js";

/** Sessions of the server's pool (all but `except`) still inside a transaction or waiting on a lock. */
async function leftoverSessions(t: Pick<Harness, "sql">, except: number): Promise<unknown[]> {
  return t.sql(
    `SELECT pid, state, wait_event_type FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND pid <> $1
       AND (state LIKE 'idle in transaction%' OR wait_event_type = 'Lock')`,
    [except],
  );
}

function expectUnavailable(res: { status: number; headers: Headers; body: any }, detail: RegExp) {
  expect(res.status).toBe(503);
  expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
  expect(res.body.errors[0]).toMatchObject({ status: 503, title: "Service Unavailable", code: "placement.undefined_code" });
  expect(res.body.errors[0].detail).toMatch(detail);
  expect(res.body.errors[0].detail).not.toMatch(/SELECT|UPDATE|lock_timeout|\n\s+at /);
}

describe("a write blocked on a row lock", () => {
  let t: Harness;
  beforeAll(async () => {
    t = await startHarness({ config: { PLACEMENT_DB_LOCK_TIMEOUT_MS: 300, PLACEMENT_HANDLER_TIMEOUT_MS: 20_000 } });
  });
  afterEach(async () => expectTableInvariants(t.url));
  afterAll(async () => t?.close());

  it("gets 503 at lock_timeout, leaves nothing behind, and its retry succeeds", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    const consumer = newUuid();
    const lock = await holdProviderLock(t.url, rp.id);
    try {
      const blocked = await t.request("PUT", `/allocations/${consumer}`, { body: claimBody(rp.uuid, { VCPU: 2 }, null, { consumer_type: "INSTANCE" }) });
      expectUnavailable(blocked, /retry later/);
      expect(await leftoverSessions(t, lock.pid)).toEqual([]);
    } finally {
      await lock.release();
    }
    expect(await usedOn(t, rp.id, "VCPU")).toBe(0); // the 503 committed nothing
    const retry = await t.request("PUT", `/allocations/${consumer}`, { body: claimBody(rp.uuid, { VCPU: 2 }, null, { consumer_type: "INSTANCE" }) });
    expect(retry.status).toBe(204);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(2);
  });

  it("gives every session the configured bounds", async () => {
    const [row] = await t.sql("SELECT current_setting('lock_timeout') AS lock, current_setting('statement_timeout') AS statement");
    expect(row).toEqual({ lock: "300ms", statement: "30s" });
  });
});

const claim = (rp: { uuid: string }, vcpu: number, generation: number | null = null) =>
  claimBody(rp.uuid, { VCPU: vcpu }, generation, { consumer_type: "INSTANCE" });

/** The pid of a session of this database waiting on a lock, once there is one. */
const lockWaiter = (t: Pick<Harness, "sql">) =>
  waitFor(async () => {
    const rows = await t.sql("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
    return rows[0]?.pid as number | undefined;
  }, "a request to wait on the lock");

describe("a request whose connection dies, and one waiting for a connection", () => {
  let t: Harness;
  beforeAll(async () => {
    // One pooled connection and no lock_timeout: the blocked write holds the pool until its backend is terminated.
    t = await startHarness({ poolSize: 1, config: { PLACEMENT_DB_LOCK_TIMEOUT_MS: 0, PLACEMENT_DB_ACQUIRE_TIMEOUT_MS: 300 } });
  });
  afterEach(async () => expectTableInvariants(t.url));
  afterAll(async () => t?.close());

  it("answers both 503, then serves again from a fresh connection", async () => {
    const own = { sql: ownSql(t.url) };
    const rp = await createProvider(own, { VCPU: { total: 8 } });
    const lock = await holdProviderLock(t.url, rp.id);
    try {
      const pending = t.request("PUT", `/allocations/${newUuid()}`, { body: claim(rp, 1) });
      const waiter = await lockWaiter(own);
      expectUnavailable(await t.request("GET", `/resource_providers/${rp.uuid}`), /retry later/); // no connection within 300 ms
      await own.sql("SELECT pg_terminate_backend($1)", [waiter]);
      expectUnavailable(await pending, /retry later/);
      expect(await leftoverSessions(own, lock.pid)).toEqual([]);
      expect((await t.request("GET", `/resource_providers/${rp.uuid}`)).status).toBe(200);
    } finally {
      await lock.release();
    }
    expect(await usedOn(own, rp.id, "VCPU")).toBe(0);
  });
});

describe("the handler deadline", () => {
  let t: Harness;
  beforeAll(async () => {
    t = await startHarness({ config: { PLACEMENT_DB_LOCK_TIMEOUT_MS: 0, PLACEMENT_HANDLER_TIMEOUT_MS: 1_000 } });
  });
  afterEach(async () => expectTableInvariants(t.url));
  afterAll(async () => t?.close());

  it("answers 503 in time; the write under it commits whole once the lock is free, and its retry gets 409", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    const consumer = newUuid();
    const lock = await holdProviderLock(t.url, rp.id);
    try {
      const late = await t.request("PUT", `/allocations/${consumer}`, { body: claim(rp, 3) });
      expectUnavailable(late, /did not complete within 1000 ms; retry later/);
    } finally {
      await lock.release();
    }
    // The transaction was not cut: it was waiting on the lock, and now commits in full.
    await waitFor(async () => ((await usedOn(t, rp.id, "VCPU")) === 3 ? true : undefined), "the late write to commit");
    const retry = await t.request("PUT", `/allocations/${consumer}`, { body: claim(rp, 3) });
    expect(retry.status).toBe(409);
    expect(retry.body.errors[0].code).toBe("placement.concurrent_update");
    const held = await t.request("GET", `/allocations/${consumer}`);
    expect(held.body).toMatchObject({ allocations: { [rp.uuid]: { resources: { VCPU: 3 } } }, consumer_generation: 1 });
    expect(await usedOn(t, rp.id, "VCPU")).toBe(3);
  });
});
