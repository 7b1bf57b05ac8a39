/**
 * GET /allocation_candidates against real PostgreSQL, data inserted straight
 * into the tables. Every test uses its own custom resource classes and traits,
 * so tests see only their own providers. Each test says which path answers:
 * on a cloud of single providers ("single providers", "traits and
 * aggregates", a database that never gets a tree) every path that can answer
 * a flat cloud, which must agree byte for byte; on trees and sharing
 * providers the general plan, forced, over the database's reads and over the
 * cloud view's trees, which must agree byte for byte too.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness } from "../support/harness.js";
import { custom, everyPath, startData, type Data } from "./data.js";

let t: Harness;
let d: Data;
let flat: { t: Harness; d: Data };
let general: ReturnType<typeof everyPath>;
let getFlat: ReturnType<typeof everyPath>;
beforeAll(async () => {
  ({ t, d } = await startData());
  flat = await startData();
  general = everyPath(t, ["general", "tree-view"]);
  getFlat = everyPath(flat.t);
});
afterAll(async () => Promise.all([t.close(), flat.t.close()]));

const get = (query: string, version = "latest") => general(query, version);
const providersOf = (areq: any) => Object.keys(areq.allocations).sort();

describe("single providers", () => {
  it("returns one candidate per provider with room, and summaries with capacity and usage", async () => {
    const CPU = custom("CPU");
    const MEM = custom("MEM");
    const a = await flat.d.provider({ inventory: { [CPU]: 8, [MEM]: { total: 2048, reserved: 512 } } });
    const b = await flat.d.provider({ inventory: { [CPU]: 8, [MEM]: 1024 } });
    await flat.d.provider({ inventory: { [CPU]: 1, [MEM]: 4096 } }); // too few CPUs
    await flat.d.allocate(b, MEM, 512);
    const res = await getFlat(`resources=${CPU}:2,${MEM}:512`);
    expect(res.status).toBe(200);
    expect(res.body.allocation_requests).toEqual([
      { allocations: { [a.uuid]: { resources: { [CPU]: 2, [MEM]: 512 } } }, mappings: { "": [a.uuid] } },
      { allocations: { [b.uuid]: { resources: { [CPU]: 2, [MEM]: 512 } } }, mappings: { "": [b.uuid] } },
    ]);
    expect(res.body.provider_summaries[b.uuid]).toEqual({
      resources: { [CPU]: { capacity: 8, used: 0 }, [MEM]: { capacity: 1024, used: 512 } },
      traits: [],
      parent_provider_uuid: null,
      root_provider_uuid: b.uuid,
    });
    expect(res.headers.get("cache-control")).toBe("no-cache");
  });

  it("applies min_unit, max_unit, step_size and allocation ratio", async () => {
    const DISK = custom("DISK");
    const ok = await flat.d.provider({ inventory: { [DISK]: { total: 100, minUnit: 10, maxUnit: 50, stepSize: 10, ratio: 1.5 } } });
    expect((await getFlat(`resources=${DISK}:5`)).body.allocation_requests).toEqual([]);
    expect((await getFlat(`resources=${DISK}:15`)).body.allocation_requests).toEqual([]);
    expect((await getFlat(`resources=${DISK}:60`)).body.allocation_requests).toEqual([]);
    const res = await getFlat(`resources=${DISK}:50`);
    expect(res.body.allocation_requests.map(providersOf)).toEqual([[ok.uuid]]);
    expect(res.body.provider_summaries[ok.uuid].resources[DISK].capacity).toBe(150);
  });

  it("answers the pre-1.12 list shape and older summaries", async () => {
    const CPU = custom("CPU");
    const p = await flat.d.provider({ inventory: { [CPU]: 4 }, traits: [custom("T")] });
    const res = await getFlat(`resources=${CPU}:1`, "1.10");
    expect(res.body.allocation_requests).toEqual([{ allocations: [{ resource_provider: { uuid: p.uuid }, resources: { [CPU]: 1 } }] }]);
    expect(res.body.provider_summaries[p.uuid]).toEqual({ resources: { [CPU]: { capacity: 4, used: 0 } } });
  });

  it("honours limit", async () => {
    const CPU = custom("CPU");
    for (let i = 0; i < 5; i++) await flat.d.provider({ inventory: { [CPU]: 4 } });
    const res = await getFlat(`resources=${CPU}:1&limit=2`);
    expect(res.body.allocation_requests).toHaveLength(2);
    expect(Object.keys(res.body.provider_summaries)).toHaveLength(2);
  });
});

describe("traits and aggregates", () => {
  it("filters by required, forbidden and any-of traits", async () => {
    const CPU = custom("CPU");
    const [A, B, C] = [custom("A"), custom("B"), custom("C")];
    const pa = await flat.d.provider({ inventory: { [CPU]: 4 }, traits: [A] });
    const pab = await flat.d.provider({ inventory: { [CPU]: 4 }, traits: [A, B] });
    const pc = await flat.d.provider({ inventory: { [CPU]: 4 }, traits: [C] });
    const uuids = async (q: string) => (await getFlat(`resources=${CPU}:1&${q}`)).body.allocation_requests.flatMap(providersOf);
    expect(await uuids(`required=${A}`)).toEqual([pa.uuid, pab.uuid]);
    expect(await uuids(`required=${A},!${B}`)).toEqual([pa.uuid]);
    expect(await uuids(`required=in:${B},${C}`)).toEqual([pab.uuid, pc.uuid]);
    expect(await uuids(`required=in:${A},${C}&required=!${B}`)).toEqual([pa.uuid, pc.uuid]);
  });

  it("rejects unknown traits and classes with Placement's messages", async () => {
    const res = await getFlat(`resources=${custom("NOPE")}:1`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].detail).toContain("Invalid resource class in resources parameter: No such resource class CUSTOM_NOPE");
    const CPU = custom("CPU");
    await flat.d.provider({ inventory: { [CPU]: 1 } });
    const trait = await getFlat(`resources=${CPU}:1&required=CUSTOM_NOT_THERE`);
    expect(trait.status).toBe(400);
    expect(trait.body.errors[0].detail).toContain("No such trait(s): CUSTOM_NOT_THERE.");
  });

  it("filters by member_of, in:, repeated and forbidden aggregates", async () => {
    const CPU = custom("CPU");
    const [agg1, agg2] = [randomUUID(), randomUUID()];
    const p1 = await flat.d.provider({ inventory: { [CPU]: 4 }, aggregates: [agg1] });
    const p12 = await flat.d.provider({ inventory: { [CPU]: 4 }, aggregates: [agg1, agg2] });
    const p0 = await flat.d.provider({ inventory: { [CPU]: 4 } });
    const uuids = async (q: string) => (await getFlat(`resources=${CPU}:1&${q}`)).body.allocation_requests.flatMap(providersOf);
    expect(await uuids(`member_of=${agg1}`)).toEqual([p1.uuid, p12.uuid]);
    expect(await uuids(`member_of=${agg1}&member_of=${agg2}`)).toEqual([p12.uuid]);
    expect(await uuids(`member_of=in:${agg2},${randomUUID()}`)).toEqual([p12.uuid]);
    expect(await uuids(`member_of=!${agg2}`)).toEqual([p1.uuid, p0.uuid]);
  });
});

describe("sharing providers", () => {
  it("combines a compute node with the storage it shares through an aggregate", async () => {
    const CPU = custom("CPU");
    const DISK = custom("DISK");
    const agg = randomUUID();
    const cn1 = await d.provider({ inventory: { [CPU]: 4 }, aggregates: [agg] });
    const cn2 = await d.provider({ inventory: { [CPU]: 4, [DISK]: 100 }, aggregates: [agg] });
    const ss = await d.provider({ inventory: { [DISK]: 1000 }, traits: ["MISC_SHARES_VIA_AGGREGATE"], aggregates: [agg] });
    const res = await get(`resources=${CPU}:1,${DISK}:10`);
    const sets = res.body.allocation_requests.map(providersOf);
    expect(sets).toHaveLength(3);
    expect(sets).toContainEqual([cn1.uuid, ss.uuid].sort());
    expect(sets).toContainEqual([cn2.uuid]);
    expect(sets).toContainEqual([cn2.uuid, ss.uuid].sort());
    expect(Object.keys(res.body.provider_summaries).sort()).toEqual([cn1.uuid, cn2.uuid, ss.uuid].sort());

    // The sharing provider alone satisfies a disk-only request once, however many trees it anchors to.
    const diskOnly = await get(`resources=${DISK}:500`);
    expect(diskOnly.body.allocation_requests.map(providersOf)).toEqual([[ss.uuid]]);
  });

  it("pins a group to the sharing provider's tree with in_tree and still anchors in the trees it shares with", async () => {
    const [CPU, DISK] = [custom("CPU"), custom("DISK")];
    const agg = randomUUID();
    const cn1 = await d.provider({ inventory: { [CPU]: 4 }, aggregates: [agg] });
    const cn2 = await d.provider({ inventory: { [CPU]: 4 }, aggregates: [agg] });
    await d.provider({ inventory: { [CPU]: 4, [DISK]: 100 } });
    const ss = await d.provider({ inventory: { [DISK]: 1000 }, traits: ["MISC_SHARES_VIA_AGGREGATE"], aggregates: [agg] });
    const res = await get(`resources_S=${DISK}:10&in_tree_S=${ss.uuid}&resources_C=${CPU}:1&group_policy=none`);
    expect(res.body.allocation_requests.map(providersOf).sort()).toEqual([[cn1.uuid, ss.uuid].sort(), [cn2.uuid, ss.uuid].sort()].sort());
    // Pinned to a compute node instead, only that tree anchors.
    const pinned = await get(`resources_S=${DISK}:10&resources_C=${CPU}:1&in_tree_C=${cn2.uuid}&group_policy=none`);
    expect(pinned.body.allocation_requests.map(providersOf)).toEqual([[cn2.uuid, ss.uuid].sort()]);
  });
});

describe("nested trees and granular groups", () => {
  async function numaHost(CPU: string, VF: string, extraTraits: string[] = []) {
    const cn = await d.provider({ traits: extraTraits });
    const numa0 = await d.provider({ parent: cn, inventory: { [CPU]: 4 } });
    const numa1 = await d.provider({ parent: cn, inventory: { [CPU]: 4 } });
    const pf0 = await d.provider({ parent: numa0, inventory: { [VF]: 8 } });
    const pf1 = await d.provider({ parent: numa1, inventory: { [VF]: 8 } });
    return { cn, numa0, numa1, pf0, pf1 };
  }

  it("spreads the unsuffixed group over a tree (1.29) and refuses to before", async () => {
    const [CPU, VF] = [custom("CPU"), custom("VF")];
    const h = await numaHost(CPU, VF);
    const res = await get(`resources=${CPU}:1,${VF}:1`);
    expect(res.body.allocation_requests).toHaveLength(4);
    expect(Object.keys(res.body.provider_summaries)).toHaveLength(5);
    expect(res.body.provider_summaries[h.pf0.uuid]).toMatchObject({ parent_provider_uuid: h.numa0.uuid, root_provider_uuid: h.cn.uuid });
    expect((await get(`resources=${CPU}:1,${VF}:1`, "1.28")).body.allocation_requests).toEqual([]);
  });

  it("keeps granular groups on distinct providers with isolate, and maps suffixes", async () => {
    const [CPU, VF] = [custom("CPU"), custom("VF")];
    const h = await numaHost(CPU, VF);
    const res = await get(`resources_A=${VF}:1&resources_B=${VF}:1&group_policy=isolate`);
    expect(res.body.allocation_requests).toHaveLength(2);
    for (const areq of res.body.allocation_requests) expect(areq.mappings._A).not.toEqual(areq.mappings._B);
    const none = await get(`resources_A=${VF}:1&resources_B=${VF}:1&group_policy=none`);
    expect(none.body.allocation_requests).toHaveLength(4);
    const same = none.body.allocation_requests.find((a: any) => a.mappings._A[0] === a.mappings._B[0]);
    expect(same.allocations[same.mappings._A[0]].resources[VF]).toBe(2);
    expect([h.pf0.uuid, h.pf1.uuid]).toContain(same.mappings._A[0]);
  });

  it("keeps same_subtree groups under one provider, including a resourceless group", async () => {
    const [CPU, VF] = [custom("CPU"), custom("VF")];
    const NUMA = custom("NUMA");
    const h = await numaHost(CPU, VF);
    await d.trait(h.numa0, NUMA);
    await d.trait(h.numa1, NUMA);
    const res = await get(
      `resources_C=${CPU}:1&resources_N=${VF}:1&required_R=${NUMA}&same_subtree=_C,_N,_R&group_policy=none`,
    );
    expect(res.status).toBe(200);
    const pairs = res.body.allocation_requests.map((a: any) => [a.mappings._C[0], a.mappings._N[0], a.mappings._R[0]]);
    expect(pairs).toEqual(
      expect.arrayContaining([
        [h.numa0.uuid, h.pf0.uuid, h.numa0.uuid],
        [h.numa1.uuid, h.pf1.uuid, h.numa1.uuid],
      ]),
    );
    expect(pairs).toHaveLength(2);
  });

  it("filters anchors with root_required and trees with in_tree", async () => {
    const [CPU, VF] = [custom("CPU"), custom("VF")];
    const ROOT = custom("ROOT");
    const h1 = await numaHost(CPU, VF, [ROOT]);
    const h2 = await numaHost(CPU, VF);
    const roots = async (q: string) =>
      new Set((await get(`resources=${CPU}:1&${q}`)).body.allocation_requests.map((a: any) => Object.keys(a.allocations)[0]));
    expect(await roots(`root_required=${ROOT}`)).toEqual(new Set([h1.numa0.uuid, h1.numa1.uuid]));
    expect(await roots(`root_required=!${ROOT}`)).toEqual(new Set([h2.numa0.uuid, h2.numa1.uuid]));
    expect(await roots(`in_tree=${h2.pf1.uuid}`)).toEqual(new Set([h2.numa0.uuid, h2.numa1.uuid]));
    expect(await roots(`in_tree=${randomUUID()}`)).toEqual(new Set());
  });

  it("answers a wide tree (8 children of one class, 8 isolated groups) quickly with limit=10", async () => {
    const VF = custom("VF");
    const root = await d.provider();
    for (let i = 0; i < 8; i++) await d.provider({ parent: root, inventory: { [VF]: 4 } });
    const groups = Array.from({ length: 8 }, (_, i) => `resources${i + 1}=${VF}:1`).join("&");
    const started = performance.now();
    const res = await get(`${groups}&group_policy=isolate&limit=10`);
    const elapsed = performance.now() - started;
    expect(res.status).toBe(200);
    expect(res.body.allocation_requests).toHaveLength(10);
    for (const areq of res.body.allocation_requests) {
      const used = Object.values(areq.mappings).map((ps: any) => ps[0]);
      expect(new Set(used).size).toBe(8);
    }
    expect(elapsed).toBeLessThan(2000);
  });

  it("streams a large answer (6,400 candidates, past the megabyte where it starts to leave) that parses whole, in the order a limit gives", async () => {
    const VF = custom("VF");
    const root = await d.provider();
    for (let i = 0; i < 80; i++) await d.provider({ parent: root, inventory: { [VF]: 4 } });
    const query = `resources1=${VF}:1&resources2=${VF}:1&group_policy=none`;
    const res = await get(query);
    expect(res.status).toBe(200);
    expect(res.body.allocation_requests).toHaveLength(6400);
    expect(Object.keys(res.body.provider_summaries)).toHaveLength(81);
    const limited = await get(`${query}&limit=100`);
    expect(res.body.allocation_requests.slice(0, 100)).toEqual(limited.body.allocation_requests);
  });
});
