/**
 * Flat candidates keep each provider's uuid, capacities and traits between
 * requests (provider-details.ts), keyed by what the database says changed.
 * These tests show a summary first (so it is kept), then change the provider
 * every way it can change, through the API and behind its back, and check
 * that the next answer shows the change.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProviderDetailsCache, type Runner } from "../../src/services/candidates/provider-details.js";
import type { Harness } from "../support/harness.js";
import { custom, startData, type Data } from "./data.js";

let t: Harness;
let d: Data;
beforeAll(async () => void ({ t, d } = await startData()));
afterAll(async () => t.close());

const summaryOf = async (uuid: string, resources: string) => {
  const res = await t.request("GET", `/allocation_candidates?resources=${resources}`);
  expect(res.status).toBe(200);
  return res.body.provider_summaries[uuid];
};

const generation = async (uuid: string) => (await t.request("GET", `/resource_providers/${uuid}`)).body.generation as number;

describe("kept provider details", () => {
  it("follow inventory, trait and usage changes made through the API after a summary was shown", async () => {
    const [CPU, MEM, A, B] = [custom("CPU"), custom("MEM"), custom("A"), custom("B")];
    const p = await d.provider({ inventory: { [CPU]: 4 }, traits: [A] });
    await t.request("PUT", `/resource_classes/${MEM}`);
    await t.request("PUT", `/traits/${B}`);
    expect(await summaryOf(p.uuid, `${CPU}:1`)).toEqual({
      resources: { [CPU]: { capacity: 4, used: 0 } },
      traits: [A],
      parent_provider_uuid: null,
      root_provider_uuid: p.uuid,
    });

    const put = await t.request("PUT", `/resource_providers/${p.uuid}/inventories`, {
      body: { resource_provider_generation: await generation(p.uuid), inventories: { [CPU]: { total: 8 }, [MEM]: { total: 16, allocation_ratio: 1.5 } } },
    });
    expect(put.status).toBe(200);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 8, used: 0 }, [MEM]: { capacity: 24, used: 0 } });

    const traits = await t.request("PUT", `/resource_providers/${p.uuid}/traits`, {
      body: { resource_provider_generation: await generation(p.uuid), traits: [A, B] },
    });
    expect(traits.status).toBe(200);
    // Traits in id order: A was created first.
    expect((await summaryOf(p.uuid, `${CPU}:1`)).traits).toEqual([A, B]);

    const consumer = randomUUID();
    const claim = await t.request("PUT", `/allocations/${consumer}`, {
      body: {
        allocations: { [p.uuid]: { resources: { [CPU]: 3, [MEM]: 5 } } },
        project_id: randomUUID(),
        user_id: randomUUID(),
        consumer_generation: null,
        consumer_type: "INSTANCE",
      },
    });
    expect(claim.status).toBe(204);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 8, used: 3 }, [MEM]: { capacity: 24, used: 5 } });

    // Freeing usage does not bump the generation (as in Placement); the summary must still show it.
    const before = await generation(p.uuid);
    expect((await t.request("DELETE", `/allocations/${consumer}`)).status).toBe(204);
    expect(await generation(p.uuid)).toBe(before);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 8, used: 0 }, [MEM]: { capacity: 24, used: 0 } });
  });

  it("follow changes written straight into the tables, which bump no generation", async () => {
    const [CPU, A, B] = [custom("CPU"), custom("A"), custom("B")];
    const p = await d.provider({ inventory: { [CPU]: 4 }, traits: [A] });
    expect(await summaryOf(p.uuid, `${CPU}:1`)).toMatchObject({ resources: { [CPU]: { capacity: 4, used: 0 } }, traits: [A] });
    const gen = await generation(p.uuid);

    // An operator's UPDATE in psql: only the row changes.
    await t.sql(`UPDATE inventories SET total = 6, allocation_ratio = 2 WHERE resource_provider_id = $1`, [p.id]);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 12, used: 0 } });
    await d.trait(p, B);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).traits).toEqual([A, B]);
    await t.sql(`DELETE FROM resource_provider_traits WHERE resource_provider_id = $1`, [p.id]);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).traits).toEqual([]);
    const MEM = custom("MEM");
    await d.inventory(p, MEM, { total: 7 });
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 12, used: 0 }, [MEM]: { capacity: 7, used: 0 } });
    await d.allocate(p, MEM, 2);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources[MEM]).toEqual({ capacity: 7, used: 2 });
    expect(await generation(p.uuid)).toBe(gen);
  });

  it("answer from one snapshot when a provider changes between the filter and the read of its details", async () => {
    const CPU = custom("CPU");
    const p = await d.provider({ inventory: { [CPU]: 4 } });
    // When the details of this provider (new to the copy) are read, another writer has just shrunk it
    // below the request: the filter saw 4, the read would see 1.
    const pool = t.database.pool as unknown as { query: (...args: unknown[]) => Promise<unknown> };
    const query = pool.query.bind(pool);
    let interfered = false;
    pool.query = async (...args: unknown[]) => {
      if ((args[0] as { name?: string })?.name === "ac_provider_details" && !interfered) {
        interfered = true;
        await t.sql(`UPDATE inventories SET total = 1 WHERE resource_provider_id = $1`, [p.id]);
      }
      return query(...args);
    };
    try {
      const res = await t.request("GET", `/allocation_candidates?resources=${CPU}:2`);
      expect(interfered).toBe(true);
      // Filter and details again in one snapshot: no candidate, rather than one whose summary says it cannot fit.
      expect(res.body).toEqual({ allocation_requests: [], provider_summaries: {} });
    } finally {
      pool.query = query;
    }
  });
});

describe("ProviderDetailsCache", () => {
  /** A runner that answers the details read from a table of rows ([key, uuid] by id), and records which ids it read. */
  const fakeRunner = (rows: Map<number, [string, string]>) => {
    const reads: number[][] = [];
    const runner = {
      query: async (config: { values: [number[]] }) => {
        reads.push(config.values[0]);
        return { rows: config.values[0].filter((id) => rows.has(id)).map((id) => [id, rows.get(id)![0], rows.get(id)![1], `1 ${id}`, "T"]) };
      },
    } as unknown as Runner;
    return { runner, reads };
  };

  it("reads only what it lacks or what changed, and refuses details newer than the statement's snapshot", async () => {
    const cache = new ProviderDetailsCache();
    const rows = new Map<number, [string, string]>([
      [1, ["0 a", "u1"]],
      [2, ["0 a", "u2"]],
    ]);
    const { runner, reads } = fakeRunner(rows);
    const both = [
      { id: 1, key: "0 a" },
      { id: 2, key: "0 a" },
    ];
    expect(await cache.resolve(runner, both)).toEqual([
      { uuid: "u1", inventories: [[1, 1]], traits: "T" },
      { uuid: "u2", inventories: [[1, 2]], traits: "T" },
    ]);
    await cache.resolve(runner, both);
    expect(reads).toEqual([[1, 2]]);

    // Provider 2 changed: only it is read again.
    rows.set(2, ["1 b", "u2"]);
    await cache.resolve(runner, [both[0], { id: 2, key: "1 b" }]);
    expect(reads).toEqual([[1, 2], [2]]);

    // The statement saw key "2 c", but by the time of the read provider 2 changed again, or went away.
    rows.set(2, ["3 d", "u2"]);
    expect(await cache.resolve(runner, [both[0], { id: 2, key: "2 c" }])).toBeUndefined();
    rows.delete(2);
    expect(await cache.resolve(runner, [{ id: 2, key: "3 d" }])).toBeUndefined();
    expect(reads).toEqual([[1, 2], [2], [2], [2]]);
  });

  it("gives a request the details its statement saw, even if another request keeps newer ones meanwhile", async () => {
    const cache = new ProviderDetailsCache();
    const rows = new Map<number, [string, string]>([
      [1, ["0 a", "u1"]],
      [2, ["0 a", "u2 as A saw it"]],
    ]);
    const { runner } = fakeRunner(rows);
    await cache.resolve(runner, [{ id: 2, key: "0 a" }]);
    // Request A: provider 1 must be read (held back here), provider 2 is kept at the key A's statement saw.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = {
      query: async (config: unknown) => {
        await gate;
        return (runner as unknown as { query: (c: unknown) => unknown }).query(config);
      },
    } as unknown as Runner;
    const a = cache.resolve(slow, [
      { id: 1, key: "0 a" },
      { id: 2, key: "0 a" },
    ]);
    // Request B, meanwhile: provider 2 has changed, B reads and keeps the new details.
    rows.set(2, ["1 b", "u2 changed"]);
    expect((await cache.resolve(runner, [{ id: 2, key: "1 b" }]))!.map((d) => d.uuid)).toEqual(["u2 changed"]);
    release();
    expect((await a)!.map((d) => d.uuid)).toEqual(["u1", "u2 as A saw it"]);
  });
});
