/**
 * A deadlock between a claim and another transaction is retried inside the
 * server, so the client never sees it; with retries turned off the client
 * gets Placement's 409 concurrent_update, not a 500. The deadlock is made
 * on purpose: a raw connection holds the second provider the claim needs,
 * waits until the claim holds the first one and waits for the second, then
 * asks for the first. Its own deadlock_timeout is long, so PostgreSQL
 * breaks the cycle by aborting the claim's transaction.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { createProvider, overcommitted, PROJECT, USER } from "./fixtures.js";

const harnesses: Harness[] = [];
afterAll(async () => Promise.all(harnesses.map((h) => h.close())));

async function claimThroughADeadlock(retries: number) {
  const t = await startHarness({ config: { PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT: retries } });
  harnesses.push(t);
  const first = await createProvider(t, { VCPU: { total: 8 } });
  const second = await createProvider(t, { VCPU: { total: 8 } });
  expect(first.id).toBeLessThan(second.id);

  const other = new pg.Client({ connectionString: t.url });
  await other.connect();
  try {
    await other.query("SET deadlock_timeout = '10s'");
    await other.query("BEGIN");
    await other.query("SELECT 1 FROM resource_providers WHERE id = $1 FOR UPDATE", [second.id]);
    const claim = t.request("PUT", `/allocations/${newUuid()}`, {
      body: {
        allocations: { [first.uuid]: { resources: { VCPU: 1 } }, [second.uuid]: { resources: { VCPU: 1 } } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: null,
        consumer_type: "INSTANCE",
      },
    });
    // Wait until the claim is blocked on a row lock (it then holds the first provider).
    for (let i = 0; i < 100; i++) {
      const waiting = await other.query(
        "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
      );
      if (waiting.rowCount) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await other.query("SELECT 1 FROM resource_providers WHERE id = $1 FOR UPDATE", [first.id]);
    await other.query("COMMIT");
    const res = await claim;
    const used = await t.sql<{ n: number }>("SELECT count(*)::int AS n FROM allocations");
    expect(await overcommitted(t)).toEqual([]);
    return { res, allocations: used[0].n };
  } finally {
    await other.end();
  }
}

describe("deadlocks", () => {
  it("are retried inside the server: the claim succeeds", async () => {
    const { res, allocations } = await claimThroughADeadlock(10);
    expect(res.status).toBe(204);
    expect(allocations).toBe(2);
  });

  it("become Placement's 409 concurrent_update when no retry is allowed, with nothing written", async () => {
    const { res, allocations } = await claimThroughADeadlock(0);
    expect(res.status).toBe(409);
    expect(res.body.errors[0].code).toBe("placement.concurrent_update");
    expect(res.body.errors[0].detail).toContain("Inventory and/or allocations changed while attempting to allocate");
    expect(allocations).toBe(0);
  });
});
