/**
 * Flat clouds (no trees, no sharing providers in the database): the flat
 * view (cloud-view.ts, flat-answer.ts), the engine's flat source (flat-source.ts, one
 * filter with the limit pushed down, batch after batch) and the general plan
 * all answer here, and every request goes through each of them (everyPath),
 * which must agree byte for byte. This file's database never gets a tree or a
 * sharing provider.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness } from "../support/harness.js";
import { alone, custom, everyPath, startData, type Data } from "./data.js";

let t: Harness;
let d: Data;
let get: ReturnType<typeof everyPath>;
beforeAll(async () => {
  ({ t, d } = await startData());
  get = everyPath(t);
});
afterAll(async () => t.close());

const uuids = (res: { body: any }) => res.body.allocation_requests.map((a: any) => Object.keys(a.allocations)[0]);

describe("flat deployments", () => {
  it("escapes a uuid and a trait name that need it, and writes them as UTF-8 (rows written around the API), as the reference renderer does", async () => {
    const CPU = custom("CPU");
    const odd = `${custom("T")}"\\é`;
    const p = await d.provider({ inventory: { [CPU]: 4 }, traits: [odd] });
    const uuid = `q"\\é-${p.id}`;
    await t.sql(`UPDATE resource_providers SET uuid = $2 WHERE id = $1`, [p.id, uuid]);
    // everyPath holds every path's bytes against the reference renderer's.
    const res = await get(`resources=${CPU}:1`);
    expect(uuids(res)).toEqual([uuid]);
    expect(res.body.provider_summaries[uuid].traits).toEqual([odd]);
    expect(res.body.provider_summaries[uuid].root_provider_uuid).toBe(uuid);
  });

  it("applies capacity, traits, aggregates and root_required in one filter, in id order", async () => {
    const [CPU, A, B] = [custom("CPU"), custom("A"), custom("B")];
    const agg = randomUUID();
    const p1 = await d.provider({ inventory: { [CPU]: 4 }, traits: [A], aggregates: [agg] });
    const p2 = await d.provider({ inventory: { [CPU]: 4 }, traits: [A, B] });
    const p3 = await d.provider({ inventory: { [CPU]: 1 }, traits: [A], aggregates: [agg] });
    await d.allocate(p3, CPU, 1);
    expect(uuids(await get(`resources=${CPU}:1`))).toEqual([p1.uuid, p2.uuid]);
    expect(uuids(await get(`resources=${CPU}:1&required=${A},!${B}`))).toEqual([p1.uuid]);
    expect(uuids(await get(`resources=${CPU}:1&member_of=${agg}`))).toEqual([p1.uuid]);
    expect(uuids(await get(`resources=${CPU}:1&member_of=!${agg}`))).toEqual([p2.uuid]);
    expect(uuids(await get(`resources=${CPU}:1&root_required=${B}`))).toEqual([p2.uuid]);
    expect(uuids(await get(`resources=${CPU}:1&in_tree=${p2.uuid}`))).toEqual([p2.uuid]);
  });

  it("adds up what several groups take from the one provider, and cannot isolate two granular groups", async () => {
    const CPU = custom("CPU");
    const p = await d.provider({ inventory: { [CPU]: { total: 4, maxUnit: 3 } } });
    const both = await get(`resources1=${CPU}:1&resources2=${CPU}:2&group_policy=none`);
    expect(both.body.allocation_requests).toEqual([
      { allocations: { [p.uuid]: { resources: { [CPU]: 3 } } }, mappings: { "1": [p.uuid], "2": [p.uuid] } },
    ]);
    expect((await get(`resources1=${CPU}:2&resources2=${CPU}:2&group_policy=none`)).body.allocation_requests).toEqual([]);
    expect((await get(`resources1=${CPU}:1&resources2=${CPU}:1&group_policy=isolate`)).body.allocation_requests).toEqual([]);
  });

  it("checks each group's amount against min_unit and step_size and their sum against max_unit and capacity, as the merge does", async () => {
    const CPU = custom("CPU");
    const p = await d.provider({ inventory: { [CPU]: { total: 12, minUnit: 2, maxUnit: 8, stepSize: 2 } } });
    await d.allocate(p, CPU, 2);
    const both = (a: number, b: number) => get(`resources1=${CPU}:${a}&resources2=${CPU}:${b}&group_policy=none`);
    expect(uuids(await both(2, 4))).toEqual([p.uuid]);
    // 1 is below min_unit, 3 is off the step, 6 + 4 is above max_unit, 8 + 2 (plus the 2 used) is within capacity but not max_unit.
    for (const [a, b] of [[1, 3], [2, 3], [6, 4], [8, 2]]) expect(uuids(await both(a, b))).toEqual([]);
    // Usage shows in the summary, and before 1.27 only the requested classes do.
    const MEM = custom("MEM");
    const q = await d.provider({ inventory: { [CPU]: 4, [MEM]: 8 } });
    await d.allocate(q, MEM, 3);
    const res = await get(`resources=${CPU}:4`);
    expect(res.body.provider_summaries[q.uuid].resources).toEqual({ [CPU]: { capacity: 4, used: 0 }, [MEM]: { capacity: 8, used: 3 } });
    const old = await get(`resources=${CPU}:4`, "1.26");
    expect(old.body.provider_summaries[q.uuid].resources).toEqual({ [CPU]: { capacity: 4, used: 0 } });
    // Usage counts the same when aggregates narrow the providers first.
    const agg = randomUUID();
    const r = await d.provider({ inventory: { [CPU]: 4 }, aggregates: [agg] });
    await d.allocate(r, CPU, 3);
    expect(uuids(await get(`resources=${CPU}:2&member_of=${agg}`))).toEqual([]);
    const narrowed = await get(`resources=${CPU}:1&member_of=${agg}`);
    expect(uuids(narrowed)).toEqual([r.uuid]);
    expect(narrowed.body.provider_summaries[r.uuid].resources).toEqual({ [CPU]: { capacity: 4, used: 3 } });
  });

  it("walks providers in batches until the limit is met (the flat source, whose filter checks each group alone)", async () => {
    // The flat source's filter passes every provider with room for one of each group; the merge then
    // refuses the first 70, so batches sized from the limit come back empty until the walk passes them.
    const walk = everyPath(t, ["flat-source", "general", "flat-view"]);
    const CPU = custom("CPU");
    const made = [];
    for (let i = 0; i < 80; i++) made.push(await d.provider({ inventory: { [CPU]: 2 } }));
    // Two groups of 1 each fit everywhere except where a prior claim leaves only 1: those are skipped by the merge.
    for (const p of made.slice(0, 70)) await d.allocate(p, CPU, 1);
    const res = await walk(`resources=${CPU}:1&resources1=${CPU}:1&group_policy=none&limit=5`);
    expect(uuids(res)).toEqual(made.slice(70, 75).map((p) => p.uuid));
    expect(Object.keys(res.body.provider_summaries)).toHaveLength(5);
  });

  it("keeps providers in id order under a limit as the flat view learns of new ones and loses old ones", async () => {
    // A database of its own: every provider in it is a candidate.
    const own = await startData();
    try {
      const CPU = custom("CPU");
      const made = [];
      for (let i = 0; i < 6; i++) made.push(await own.d.provider({ inventory: { [CPU]: 2 } }));
      const view = own.t.requestVia(alone("flat-view"));
      const ask = async (query: string) => uuids(await view("GET", `/allocation_candidates?${query}`, { version: "latest" }));
      expect(await ask(`resources=${CPU}:1`)).toEqual(made.map((p) => p.uuid));
      // Four more, after the view's first read: they come after the first six.
      for (let i = 0; i < 4; i++) made.push(await own.d.provider({ inventory: { [CPU]: 2 } }));
      expect(await ask(`resources=${CPU}:1&limit=6`)).toEqual(made.slice(0, 6).map((p) => p.uuid));
      expect(await ask(`resources=${CPU}:1&limit=8`)).toEqual(made.slice(0, 8).map((p) => p.uuid));
      await own.d.remove(made[1]);
      const left = made.filter((_, i) => i !== 1).map((p) => p.uuid);
      expect(await ask(`resources=${CPU}:1&limit=8`)).toEqual(left.slice(0, 8));
      await everyPath(own.t)(`resources=${CPU}:1&limit=7`);
    } finally {
      await own.t.close();
    }
  });

  it("keeps Placement's rule that a resourceless group needs a trait or aggregate filter", async () => {
    const [CPU, R] = [custom("CPU"), custom("R")];
    const p = await d.provider({ inventory: { [CPU]: 2 }, traits: [R] });
    // A resourceless group: the flat view does not take it.
    const res = await everyPath(t, ["flat-source", "general"])(`resources=${CPU}:1&required_X=${R}&same_subtree=_X`);
    expect(res.body.allocation_requests).toEqual([{ allocations: { [p.uuid]: { resources: { [CPU]: 1 } } }, mappings: { "": [p.uuid], _X: [p.uuid] } }]);
  });
});
