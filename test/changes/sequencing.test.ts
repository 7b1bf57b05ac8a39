/**
 * The sequencing trigger reads each changed provider's state before it takes
 * the feed's lock (migration 0016), and reads it again under the lock when a
 * transaction that changed the same provider committed in between. Two
 * writers that touch different rows of one provider (its allocations' usage,
 * its traits) are held at that lock by a third session, so the second to be
 * sequenced read its state before the first committed: its feed row must
 * still carry the provider's state after both, and the first's row the state
 * after the first alone.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { tablesState } from "./support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

const FEED_LOCK = "SELECT pg_advisory_lock(hashtext('placement.provider_changes'))";

async function client(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: t.url });
  await c.connect();
  return c;
}

/** Backends of this database waiting for an advisory lock. */
async function waitingOnFeedLock(): Promise<number> {
  const rows = await t.sql<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()",
  );
  return rows[0].n;
}

async function until(condition: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("condition not reached");
}

it("a state read before a concurrent commit to the same provider is read again under the lock", async () => {
  const uuid = newUuid();
  const created = await t.request("POST", "/resource_providers", { body: { name: `seq-${uuid}`, uuid } });
  expect(created.status, created.text).toBe(200);
  const inv = await t.request("PUT", `/resource_providers/${uuid}/inventories`, {
    body: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } },
  });
  expect(inv.status, inv.text).toBe(200);
  const consumer = newUuid();
  const put = await t.request("PUT", `/allocations/${consumer}`, {
    body: { allocations: { [uuid]: { resources: { VCPU: 3 } } }, project_id: "p", user_id: "u", consumer_generation: null, consumer_type: "INSTANCE" },
  });
  expect(put.status, put.text).toBe(204);
  expect((await t.request("PUT", "/traits/CUSTOM_SEQUENCED")).status).toBe(201);
  const [{ id: providerId }] = await t.sql<{ id: number }>("SELECT id FROM resource_providers WHERE uuid = $1", [uuid]);
  const [{ since }] = await t.sql<{ since: string }>("SELECT coalesce(max(seq), 0) AS since FROM provider_changes");

  const holder = await client();
  const usage = await client();
  const traits = await client();
  try {
    await holder.query(FEED_LOCK);
    // Usage: only allocations and, through the usage trigger, inventory rows; never the provider's row.
    await usage.query("BEGIN");
    await usage.query("DELETE FROM allocations WHERE consumer_id = (SELECT id FROM consumers WHERE uuid = $1)", [consumer]);
    const usageCommit = usage.query("COMMIT");
    await until(async () => (await waitingOnFeedLock()) === 1);
    // Traits: the association rows only. Its state read cannot see the usage commit, which waits at the lock.
    await traits.query("BEGIN");
    await traits.query("INSERT INTO resource_provider_traits (resource_provider_id, trait_id) SELECT $1, id FROM traits WHERE name = 'CUSTOM_SEQUENCED'", [
      providerId,
    ]);
    const traitsCommit = traits.query("COMMIT");
    await until(async () => (await waitingOnFeedLock()) === 2);
    await holder.query("SELECT pg_advisory_unlock(hashtext('placement.provider_changes'))");
    await Promise.all([usageCommit, traitsCommit]);
  } finally {
    await Promise.all([holder.end(), usage.end(), traits.end()]);
  }

  const rows = await t.sql<{ state: { usages: Record<string, number>; traits: string[] } }>(
    "SELECT state FROM provider_changes WHERE resource_provider_id = $1 AND seq > $2 ORDER BY seq",
    [providerId, since],
  );
  expect(rows.map((r) => ({ usages: r.state.usages, traits: r.state.traits }))).toEqual([
    // The usage write, sequenced first (it asked for the lock first): its own change, not yet the trait.
    { usages: { VCPU: 0 }, traits: [] },
    // The trait write read its state while the usage write was not yet committed: read again under the lock.
    { usages: { VCPU: 0 }, traits: ["CUSTOM_SEQUENCED"] },
  ]);
  // And the last row is the provider as the tables hold it.
  const last = await t.sql<{ state: Record<string, unknown> }>(
    "SELECT state FROM provider_changes WHERE resource_provider_id = $1 ORDER BY seq DESC LIMIT 1",
    [providerId],
  );
  expect(last[0].state).toEqual((await tablesState(t)).get(uuid));
});
