/**
 * GET /changes, one writer at a time: the current cursor, what a change
 * carries for each kind of write, the long poll, a rolled-back write leaving
 * no trace, and the 410 past retention.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { apply, tablesState, type FeedChange, type HostMap } from "./support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

const cursor = async (): Promise<number> => {
  const res = await t.request("GET", "/changes");
  expect(res.status, res.text).toBe(200);
  expect(res.body.changes).toEqual([]);
  return res.body.next;
};
const since = async (from: number, extra = ""): Promise<{ changes: FeedChange[]; next: number }> => {
  const res = await t.request("GET", `/changes?since=${from}${extra}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
};

async function createProvider(name = `rp-${newUuid()}`): Promise<string> {
  const res = await t.request("POST", "/resource_providers", { body: { name } });
  expect(res.status, res.text).toBe(200);
  return res.body.uuid;
}

describe("GET /changes", () => {
  it("answers the current cursor without since, and every later change after it", async () => {
    const start = await cursor();
    expect(await since(start)).toEqual({ changes: [], next: start });
    const uuid = await createProvider("feed-one");
    const feed = await since(start);
    expect(feed.changes).toEqual([
      {
        cursor: feed.next,
        resource_provider_uuid: uuid,
        deleted: false,
        generation: 0,
        name: "feed-one",
        parent_provider_uuid: null,
        root_provider_uuid: uuid,
        inventories: {},
        usages: {},
        traits: [],
        aggregates: [],
      },
    ]);
    expect(feed.next).toBeGreaterThan(start);
    expect(await cursor()).toBe(feed.next);
  });

  it("carries inventories, usage, traits and aggregates as they are after each write, and deletions", async () => {
    const uuid = await createProvider();
    const start = await cursor();
    const host: HostMap = new Map();
    const write = async (method: string, path: string, body?: unknown) => {
      const res = await t.request(method, path, { body });
      expect(res.status, res.text).toBeLessThan(300);
    };
    await write("PUT", `/resource_providers/${uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 8, allocation_ratio: 2 }, MEMORY_MB: { total: 4096 } },
    });
    await write("PUT", "/traits/CUSTOM_FEED_TEST");
    await write("PUT", `/resource_providers/${uuid}/traits`, { resource_provider_generation: 1, traits: ["CUSTOM_FEED_TEST", "HW_CPU_X86_AVX2"] });
    const agg = newUuid();
    await write("PUT", `/resource_providers/${uuid}/aggregates`, { resource_provider_generation: 2, aggregates: [agg] });
    const consumer = newUuid();
    await write("PUT", `/allocations/${consumer}`, {
      allocations: { [uuid]: { resources: { VCPU: 3, MEMORY_MB: 1024 } } },
      project_id: "p",
      user_id: "u",
      consumer_generation: null,
      consumer_type: "INSTANCE",
    });
    const feed = await since(start);
    // One change per write, in order, each cursor higher than the last.
    expect(feed.changes.map((c) => c.generation)).toEqual([1, 2, 3, 4]);
    expect(feed.changes.map((c) => c.cursor)).toEqual([...feed.changes.map((c) => c.cursor)].sort((a, b) => a - b));
    for (const c of feed.changes) apply(host, c);
    expect(host.get(uuid)).toEqual((await tablesState(t)).get(uuid));
    expect(host.get(uuid)).toMatchObject({
      inventories: { VCPU: { total: 8, reserved: 0, allocation_ratio: 2 } },
      usages: { VCPU: 3, MEMORY_MB: 1024 },
      traits: ["CUSTOM_FEED_TEST", "HW_CPU_X86_AVX2"],
      aggregates: [agg],
    });

    // Freeing usage does not bump the generation (as in Placement), but is a change all the same.
    await write("DELETE", `/allocations/${consumer}`);
    const freed = await since(feed.next);
    expect(freed.changes).toHaveLength(1);
    expect(freed.changes[0]).toMatchObject({ generation: 4, usages: { VCPU: 0, MEMORY_MB: 0 } });

    await write("DELETE", `/resource_providers/${uuid}/traits`);
    await write("DELETE", `/resource_providers/${uuid}/inventories`);
    await write("DELETE", `/resource_providers/${uuid}`);
    const gone = await since(freed.next);
    expect(gone.changes.at(-1)).toEqual({ cursor: gone.next, resource_provider_uuid: uuid, deleted: true });
  });

  it("has nothing of a write that was refused and rolled back", async () => {
    const uuid = await createProvider();
    expect(
      (await t.request("PUT", `/resource_providers/${uuid}/inventories`, { body: { resource_provider_generation: 0, inventories: { VCPU: { total: 1 } } } })).status,
    ).toBe(200);
    const start = await cursor();
    const res = await t.request("PUT", `/allocations/${newUuid()}`, {
      body: { allocations: { [uuid]: { resources: { VCPU: 2 } } }, project_id: "p", user_id: "u", consumer_generation: null, consumer_type: "INSTANCE" },
    });
    expect(res.status).toBe(409);
    expect(await since(start)).toEqual({ changes: [], next: start });
  });

  it("long poll: waits for the next commit, and answers nothing new at the timeout", async () => {
    const start = await cursor();
    const waiting = since(start, "&timeout=30");
    await new Promise((r) => setTimeout(r, 300));
    const uuid = await createProvider();
    const woken = await waiting;
    expect(woken.changes.map((c) => c.resource_provider_uuid)).toEqual([uuid]);
    expect(await since(woken.next, "&timeout=1")).toEqual({ changes: [], next: woken.next });
  });

  it("limit counts transactions, each with all of its providers", async () => {
    const start = await cursor();
    const a = await createProvider();
    const b = await createProvider();
    const first = await since(start, "&limit=1");
    expect(first.changes.map((c) => c.resource_provider_uuid)).toEqual([a]);
    expect((await since(first.next, "&limit=1")).changes.map((c) => c.resource_provider_uuid)).toEqual([b]);
  });

  it("400 for a bad query", async () => {
    for (const q of ["since=x", "since=-1", "since=1&timeout=61", "since=1&limit=0", "since=1&bogus=1"]) {
      const res = await t.request("GET", `/changes?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.errors[0].detail, q).toContain("Invalid query string parameters");
    }
  });

  it("tells a reader whose cursor is past retention to resync (410)", async () => {
    await t.sql("UPDATE provider_changes_horizon SET retention = 3, prune_every = 1");
    try {
      const old = await cursor();
      for (let i = 0; i < 6; i++) await createProvider();
      const res = await t.request("GET", `/changes?since=${old}`);
      expect(res.status).toBe(410);
      expect(res.body.errors[0].title).toBe("Gone");
      expect(res.body.errors[0].detail).toContain(`Cursor ${old} is too old`);
      expect(res.body.errors[0].detail).toContain("Resync");
      // A fresh cursor works again, and only the retained rows are left.
      const now = await cursor();
      expect((await since(now - 3)).changes).toHaveLength(3);
      expect(await t.sql("SELECT count(DISTINCT seq)::int AS n FROM provider_changes")).toEqual([{ n: 3 }]);
    } finally {
      await t.sql("UPDATE provider_changes_horizon SET retention = 100000, prune_every = 1000");
    }
  });
});
