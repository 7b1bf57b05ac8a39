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
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { claimBody, createProvider, overcommitted, ownerDrift, PROJECT, untilSomeoneWaitsOnALock, usageDrift, usedOn, USER, type Provider } from "./fixtures.js";

const harnesses: Harness[] = [];
afterAll(async () => Promise.all(harnesses.map((h) => h.close())));

/**
 * Makes `request` deadlock: a raw session locks the second provider's rows of
 * `table`, waits until the request (which locks in id order) holds the first
 * provider's and waits for the second's, then asks for the first's. Its own
 * deadlock_timeout is long, so PostgreSQL breaks the cycle by aborting the
 * request's transaction. Returns the request's response.
 */
async function throughADeadlock<T>(t: Harness, table: "resource_providers" | "inventories", first: Provider, second: Provider, request: () => Promise<T>): Promise<T> {
  const column = table === "resource_providers" ? "id" : "resource_provider_id";
  const other = new pg.Client({ connectionString: t.url });
  await other.connect();
  try {
    await other.query("SET deadlock_timeout = '10s'");
    await other.query("BEGIN");
    await other.query(`SELECT 1 FROM ${table} WHERE ${column} = $1 FOR UPDATE`, [second.id]);
    const response = request();
    await untilSomeoneWaitsOnALock(other);
    await other.query(`SELECT 1 FROM ${table} WHERE ${column} = $1 FOR UPDATE`, [first.id]);
    await other.query("COMMIT");
    return await response;
  } finally {
    await other.end();
  }
}

async function claimThroughADeadlock(retries: number) {
  const t = await startHarness({ config: { PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT: retries } });
  harnesses.push(t);
  const first = await createProvider(t, { VCPU: { total: 8 } });
  const second = await createProvider(t, { VCPU: { total: 8 } });
  expect(first.id).toBeLessThan(second.id);

  const res = await throughADeadlock(t, "resource_providers", first, second, () =>
    t.request("PUT", `/allocations/${newUuid()}`, {
      body: {
        allocations: { [first.uuid]: { resources: { VCPU: 1 } }, [second.uuid]: { resources: { VCPU: 1 } } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: null,
        consumer_type: "INSTANCE",
      },
    }),
  );
  const used = await t.sql<{ n: number }>("SELECT count(*)::int AS n FROM allocations");
  expect(await overcommitted(t)).toEqual([]);
  const retried = (await t.metrics.registry.getSingleMetric("placement_db_transaction_retries_total")?.get())?.values ?? [];
  return { res, allocations: used[0].n, deadlockRetries: retried.find((v) => v.labels.cause === "deadlock")?.value ?? 0 };
}

describe("deadlocks", () => {
  it("are retried inside the server: the claim succeeds", async () => {
    const { res, allocations, deadlockRetries } = await claimThroughADeadlock(10);
    expect(res.status).toBe(204);
    expect(allocations).toBe(2);
    expect(deadlockRetries).toBe(1);
  });

  it("become Placement's 409 concurrent_update when no retry is allowed, with nothing written", async () => {
    const { res, allocations, deadlockRetries } = await claimThroughADeadlock(0);
    expect(res.status).toBe(409);
    expect(deadlockRetries).toBe(0);
    expect(res.body.errors[0].code).toBe("placement.concurrent_update");
    expect(res.body.errors[0].detail).toContain("Inventory and/or allocations changed while attempting to allocate");
    expect(allocations).toBe(0);
  });

  it("that a DELETE cannot retry reach the client as the same 409, not a 500, with nothing deleted", async () => {
    const t = await startHarness({ config: { PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT: 0 } });
    harnesses.push(t);
    const first = await createProvider(t, { VCPU: { total: 8 } });
    const second = await createProvider(t, { VCPU: { total: 8 } });
    const consumer = newUuid();
    const claim = await t.request("PUT", `/allocations/${consumer}`, {
      body: { ...claimBody("", {}, null, { consumer_type: "INSTANCE" }), allocations: { [first.uuid]: { resources: { VCPU: 1 } }, [second.uuid]: { resources: { VCPU: 1 } } } },
    });
    expect(claim.status).toBe(204);
    // The DELETE's trigger locks the first provider's inventory row, then waits for the second's.
    const res = await throughADeadlock(t, "inventories", first, second, () => t.request("DELETE", `/allocations/${consumer}`));
    expect(res.status).toBe(409);
    expect(res.body.errors[0].code).toBe("placement.concurrent_update");
    expect(await t.sql("SELECT 1 FROM allocations")).toHaveLength(2);
    expect(await usageDrift(t)).toEqual([]);
    expect(await ownerDrift(t)).toEqual([]);
  });
});

/**
 * Triggers keep `inventories.used` and lock the inventory rows each statement
 * changes, in id order. Writes that change usage or inventories in more than
 * one statement (a rewrite deletes a consumer's old allocations, then inserts
 * the new ones; PUT inventories updates row by row; the reshaper does both)
 * must take all those row locks up front, in one id-ordered batch, or a
 * consumer moving from A to B and one moving from B to A each hold one
 * provider's rows and wait for the other's.
 */
describe("deadlocks between writers of inventory usage", () => {
  const INSTANCE = { consumer_type: "INSTANCE" };
  const body = (allocations: Record<string, Record<string, number>>, generation: number | null) => ({
    ...claimBody("", {}, generation, INSTANCE),
    allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
  });

  it("never happen between rewrites in opposite directions and deletes", async () => {
    // Retries off: a deadlock would reach the client as a 409.
    const t = await startHarness({ config: { PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT: 0 }, poolSize: 12 });
    harnesses.push(t);
    const inventory = { VCPU: { total: 1000, max_unit: 10 }, MEMORY_MB: { total: 100000, max_unit: 1000 } };
    const a = await createProvider(t, inventory);
    const b = await createProvider(t, inventory);
    const flavor = { VCPU: 1, MEMORY_MB: 100 };
    const claim = async (allocations: Record<string, typeof flavor>) => {
      const consumer = newUuid();
      expect((await t.request("PUT", `/allocations/${consumer}`, { body: body(allocations, null) })).status).toBe(204);
      return consumer;
    };
    for (let round = 0; round < 3; round++) {
      const onA = await Promise.all(Array.from({ length: 10 }, () => claim({ [a.uuid]: flavor })));
      const onB = await Promise.all(Array.from({ length: 10 }, () => claim({ [b.uuid]: flavor })));
      const onBoth = await Promise.all(Array.from({ length: 10 }, () => claim({ [a.uuid]: flavor, [b.uuid]: flavor })));
      const replies = await Promise.all([
        ...onA.map((c) => t.request("PUT", `/allocations/${c}`, { body: body({ [b.uuid]: flavor }, 1) })),
        ...onB.map((c) => t.request("PUT", `/allocations/${c}`, { body: body({ [a.uuid]: flavor }, 1) })),
        ...onBoth.map((c) => t.request("DELETE", `/allocations/${c}`)),
      ]);
      expect(replies.filter((r) => r.status !== 204).map((r) => `${r.status} ${r.text}`)).toEqual([]);
      expect(await usageDrift(t)).toEqual([]);
      expect(await ownerDrift(t)).toEqual([]);
    }
    expect(await usedOn(t, a.id, "VCPU")).toBe(30);
    expect(await usedOn(t, b.id, "VCPU")).toBe(30);
  });

  // The same rule made deterministic, one multi-statement write at a time: a raw transaction
  // (standing for a trigger's batch half done) holds a low inventory row, the write blocks on it,
  // then the raw transaction asks for a higher row without waiting. It gets it only if the write
  // took nothing above the row it waits for; otherwise the two would be deadlocked.
  describe("a multi-statement write waits holding no row above the one it waits for", () => {
    let t: Harness;
    const rowId = async (rp: Provider, cls: string) =>
      (await t.sql<{ id: number }>(
        "SELECT i.id FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.resource_provider_id = $1 AND rc.name = $2",
        [rp.id, cls],
      ))[0].id;

    async function raceAgainstHeldRow(low: number, high: number, write: () => Promise<{ status: number; text: string }>) {
      expect(low).toBeLessThan(high);
      const other = new pg.Client({ connectionString: t.url });
      await other.connect();
      try {
        await other.query("BEGIN");
        await other.query("SELECT 1 FROM inventories WHERE id = $1 FOR UPDATE", [low]);
        const pending = write();
        await untilSomeoneWaitsOnALock(other);
        let higherFree = true;
        try {
          await other.query("SELECT 1 FROM inventories WHERE id = $1 FOR UPDATE NOWAIT", [high]);
        } catch {
          higherFree = false;
        }
        await other.query("ROLLBACK");
        const res = await pending;
        expect(res.status, res.text).toBeLessThan(300);
        expect(higherFree).toBe(true);
      } finally {
        await other.end();
      }
      expect(await usageDrift(t)).toEqual([]);
      expect(await ownerDrift(t)).toEqual([]);
    }

    beforeAll(async () => {
      t = await startHarness();
      harnesses.push(t);
    });

    it("a rewrite from a provider with higher rows to one with lower rows", async () => {
      const low = await createProvider(t, { VCPU: { total: 8 } });
      const high = await createProvider(t, { VCPU: { total: 8 } });
      const consumer = newUuid();
      expect((await t.request("PUT", `/allocations/${consumer}`, { body: body({ [high.uuid]: { VCPU: 1 } }, null) })).status).toBe(204);
      await raceAgainstHeldRow(await rowId(low, "VCPU"), await rowId(high, "VCPU"), () =>
        t.request("PUT", `/allocations/${consumer}`, { body: body({ [low.uuid]: { VCPU: 1 } }, 1) }),
      );
    });

    it("PUT inventories naming the classes in the reverse of their rows' order", async () => {
      const rp = await createProvider(t, { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } });
      const generation = (await t.request("GET", `/resource_providers/${rp.uuid}`)).body.generation;
      await raceAgainstHeldRow(await rowId(rp, "VCPU"), await rowId(rp, "MEMORY_MB"), () =>
        t.request("PUT", `/resource_providers/${rp.uuid}/inventories`, {
          body: { resource_provider_generation: generation, inventories: { MEMORY_MB: { total: 2048 }, VCPU: { total: 16 } } },
        }),
      );
    });

    it("a reshape that names the child (higher rows) before the root", async () => {
      const root = await createProvider(t, { VCPU: { total: 8 }, DISK_GB: { total: 100 } });
      const child = await createProvider(t, { MEMORY_MB: { total: 1024 } });
      await t.sql("UPDATE resource_providers SET parent_provider_id = $1, root_provider_id = $1 WHERE id = $2", [root.id, child.id]);
      const consumer = newUuid();
      expect((await t.request("PUT", `/allocations/${consumer}`, { body: body({ [root.uuid]: { VCPU: 2, DISK_GB: 10 } }, null) })).status).toBe(204);
      const generation = async (rp: Provider) => (await t.request("GET", `/resource_providers/${rp.uuid}`)).body.generation;
      const reshape = {
        inventories: {
          [child.uuid]: { resource_provider_generation: await generation(child), inventories: { MEMORY_MB: { total: 1024 }, VCPU: { total: 8 } } },
          [root.uuid]: { resource_provider_generation: await generation(root), inventories: { DISK_GB: { total: 100 } } },
        },
        allocations: { [consumer]: body({ [root.uuid]: { DISK_GB: 10 }, [child.uuid]: { VCPU: 2 } }, 1) },
      };
      await raceAgainstHeldRow(await rowId(root, "DISK_GB"), await rowId(child, "MEMORY_MB"), () =>
        t.request("POST", "/reshaper", { body: reshape }),
      );
    });
  });
});
