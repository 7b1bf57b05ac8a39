/**
 * What explain answers where GET /allocation_candidates refuses or finds
 * nothing: the same 400 (status, code and detail) for every query the
 * candidates route refuses, and for a query it answers with nothing a
 * funnel whose filter leaves 0, never a 500. Also: `limit` is ignored, the
 * answer has the documented shape, and a cloud too large for the service's
 * copy is explained alike from a copy made for the request.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXPLAIN } from "../../src/openapi/responses.js";
import { custom, startData, type Data, type Provider } from "../candidates/data.js";
import type { Harness } from "../support/harness.js";

let t: Harness;
let d: Data;
let cls: string;
let trait: string;
let agg: string;
let hosts: Provider[];
beforeAll(async () => {
  ({ t, d } = await startData());
  cls = custom("RC");
  trait = custom("TR");
  agg = randomUUID();
  hosts = [];
  for (let i = 0; i < 4; i++) {
    hosts.push(await d.provider({ inventory: { [cls]: { total: 8, maxUnit: 4 } }, traits: i % 2 ? [trait] : [], aggregates: i < 3 ? [agg] : [] }));
  }
  await d.allocate(hosts[0], cls, 6);
});
afterAll(async () => t.close());

const explain = (query: string, version = "latest") => t.request("GET", `/allocation_candidates/explain?${query}`, { version });

describe("queries GET /allocation_candidates refuses", () => {
  const refused = () => [
    "",
    "resources=",
    "resources=VCPU",
    "resources=VCPU:0",
    "resources=VCPU:-1",
    "resources=VCPU:1&limit=0",
    "resources=VCPU:1&limit=x",
    "resources=VCPU:1&group_policy=maybe",
    "resources1=VCPU:1&resources2=VCPU:1",
    "resources=VCPU:1&bogus=1",
    `resources=${custom("NOPE")}:1`,
    `resources=${cls}:1&required=${custom("NOPE")}`,
    `resources=${cls}:1&required=${trait},!${trait}`,
    `resources=${cls}:1&root_required=${custom("NOPE")}`,
    `resources=${cls}:1&root_required=${trait}&root_required=${trait}`,
    "resources=VCPU:1&member_of=not-a-uuid",
    "resources=VCPU:1&in_tree=not-a-uuid",
    "resources1=VCPU:1&same_subtree=1,2&group_policy=none",
    "required2=HW_CPU_X86_AVX&resources1=VCPU:1&same_subtree=1&group_policy=none",
  ];

  it.each(["1.10", "1.21", "1.31", "1.36", "latest"])("gets the same 400 as the candidates route at %s", async (version) => {
    for (const query of refused()) {
      const candidates = await t.request("GET", `/allocation_candidates?${query}`, { version });
      const explained = await explain(query, version);
      if (candidates.status === 200) {
        // Some forms are accepted at this version: then explain answers too.
        expect(explained.status, `${query} at ${version}: ${explained.text}`).toBe(200);
        continue;
      }
      expect(candidates.status, `${query} at ${version}`).toBe(400);
      expect(explained.status, `${query} at ${version}`).toBe(400);
      expect(explained.body.errors[0].detail, `${query} at ${version}`).toBe(candidates.body.errors[0].detail);
      expect(explained.body.errors[0].code, `${query} at ${version}`).toBe(candidates.body.errors[0].code);
    }
  });

  it("is not served below microversion 1.10, as the candidates route", async () => {
    const candidates = await t.request("GET", `/allocation_candidates?resources=${cls}:1`, { version: "1.9" });
    const explained = await explain(`resources=${cls}:1`, "1.9");
    expect(explained.status).toBe(candidates.status);
    expect(explained.status).toBe(404);
  });
});

describe("queries GET /allocation_candidates answers with nothing", () => {
  it("an aggregate no provider is in: its member_of filter leaves 0", async () => {
    const empty = randomUUID();
    const res = await explain(`resources=${cls}:1&member_of=${empty}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.allocation_requests).toBe(0);
    expect(res.body.groups[0].filters).toEqual([
      { filter: `resources:${cls}:1`, remaining: 4 },
      { filter: `member_of:${empty}`, remaining: 0 },
    ]);
    expect(res.body.trees).toEqual([{ constraint: "every group on one tree", remaining: 0 }]);
    expect(res.body.nearest).toHaveLength(4);
    for (const n of res.body.nearest) expect(n.short).toEqual([`not in aggregate ${empty}`]);
  });

  it("a class no provider has: its resources filter leaves 0, and every provider lacks it", async () => {
    const lonely = custom("LONELY");
    await t.sql(`INSERT INTO resource_classes (name) VALUES ($1)`, [lonely]);
    const res = await explain(`resources=${cls}:1,${lonely}:2`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.groups[0].filters).toEqual([
      { filter: `resources:${cls}:1`, remaining: 4 },
      { filter: `resources:${lonely}:2`, remaining: 0 },
    ]);
    expect(res.body.nearest[0].short).toEqual([`${lonely}: 2 asked, no inventory`]);
  });

  it("an unknown class the candidates route answers with nothing (after an empty aggregate): 0 everywhere, no 400", async () => {
    const query = `resources=${cls}:1&member_of=${randomUUID()}&resources1=${custom("NOPE")}:1&group_policy=none`;
    const candidates = await t.request("GET", `/allocation_candidates?${query}`);
    expect(candidates.status).toBe(200);
    const res = await explain(query);
    expect(res.status, res.text).toBe(200);
    expect(res.body.allocation_requests).toBe(0);
    expect(res.body.groups[1].filters[0].remaining).toBe(0);
    expect(res.body.trees.every((s: { remaining: number }) => s.remaining === 0)).toBe(true);
  });

  it("says which capacity rule each provider breaks", async () => {
    const res = await explain(`resources=${cls}:3&required=${trait}&member_of=${agg}`);
    expect(res.status, res.text).toBe(200);
    // hosts[0] has 2 free, hosts[1] and hosts[3] have the trait, hosts[3] is in no aggregate.
    expect(res.body.groups[0].filters.map((f: { remaining: number }) => f.remaining)).toEqual([3, 2, 1]);
    expect(res.body.allocation_requests).toBe(1);
    const byUuid = new Map(res.body.nearest.map((n: { uuid: string; short: string[] }) => [n.uuid, n.short]));
    expect(byUuid.get(hosts[0].uuid)).toEqual([`${cls}: 3 asked, 2 free of 8`, `lacks trait ${trait}`]);
    expect(byUuid.get(hosts[2].uuid)).toEqual([`lacks trait ${trait}`]);
    expect(byUuid.get(hosts[3].uuid)).toEqual([`not in aggregate ${agg}`]);
    expect(byUuid.has(hosts[1].uuid)).toBe(false);
    // Fewest shortfalls first.
    expect(res.body.nearest.map((n: { short: string[] }) => n.short.length)).toEqual([1, 1, 2]);
    const over = await explain(`resources=${cls}:5`);
    expect(over.body.nearest.find((n: { uuid: string }) => n.uuid === hosts[1].uuid).short).toEqual([`${cls}: 5 asked, max_unit 4`]);
  });
});

describe("the answer", () => {
  it("ignores limit and has the documented shape", async () => {
    const all = await explain(`resources=${cls}:1`);
    const limited = await explain(`resources=${cls}:1&limit=1`);
    expect(limited.status).toBe(200);
    expect(limited.body).toEqual(all.body);
    expect(all.body.allocation_requests).toBe(4);
    expect(() => EXPLAIN.parse(all.body)).not.toThrow();
  });

  it("sees a write committed before it, as the candidates route does", async () => {
    const fresh = custom("FRESH");
    const host = await d.provider({ inventory: { [fresh]: 8 }, traits: [fresh] });
    // Every other provider fails both filters: the host is the nearest miss.
    const query = `resources=${fresh}:4&required=${fresh}`;
    const before = await explain(query);
    expect(before.body.groups[0].filters[0].remaining).toBe(1);
    await d.allocate(host, fresh, 5);
    const after = await explain(query);
    expect(after.body.allocation_requests).toBe(0);
    expect(after.body.groups[0].filters[0].remaining).toBe(0);
    expect(after.body.nearest[0]).toEqual({ uuid: host.uuid, name: host.name, short: [`${fresh}: 4 asked, 3 free of 8`] });
  });

  it("is the same from a copy made for the request when the cloud is too large for the service's copy", async () => {
    const small = t.requestVia({ view: { maxProviders: 1, maxTreeProviders: 1 } });
    for (const query of [`resources=${cls}:3&required=${trait}&member_of=${agg}`, `resources=${cls}:1&member_of=${randomUUID()}`]) {
      const viaCopy = await small("GET", `/allocation_candidates/explain?${query}`);
      expect(viaCopy.status, viaCopy.text).toBe(200);
      expect(viaCopy.body, query).toEqual((await explain(query)).body);
    }
  });
});

describe("the constraints that combine groups, on trees", () => {
  let vf: string;
  let mark: string;
  let numa: string;
  let a: Provider;
  let b: Provider;
  beforeAll(async () => {
    vf = custom("VF");
    mark = custom("MARK");
    numa = custom("NUMA");
    // Tree a: a marked root with two NUMA children; tree b: one NUMA child.
    a = await d.provider({ traits: [mark] });
    for (let i = 0; i < 2; i++) await d.provider({ parent: a, inventory: { [vf]: 4 }, traits: [numa] });
    b = await d.provider({});
    await d.provider({ parent: b, inventory: { [vf]: 4 }, traits: [numa] });
  });

  it("counts the trees left as each is added, and says which one left a tree out", async () => {
    const res = await explain(`resources_X=${vf}:1&resources_Y=${vf}:1&group_policy=isolate&root_required=!${mark}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.allocation_requests).toBe(0);
    expect(res.body.groups.map((g: { providers: number }) => g.providers)).toEqual([3, 3]);
    expect(res.body.trees).toEqual([
      { constraint: "every group on one tree", remaining: 2 },
      { constraint: "group_policy:isolate", remaining: 1 },
      { constraint: `root_required:!${mark}`, remaining: 0 },
    ]);
    const nearest = res.body.nearest.filter((n: { uuid: string }) => n.uuid === a.uuid || n.uuid === b.uuid);
    expect(nearest).toEqual([
      { uuid: a.uuid, name: a.name, short: [`its tree anchors no candidate once root_required:!${mark}`] },
      { uuid: b.uuid, name: b.name, short: ["its tree anchors no candidate once group_policy:isolate"] },
    ]);
  });

  it("answers a resourceless group and same_subtree without a 500, its last stage the candidates' trees", async () => {
    for (const query of [
      `resources_X=${vf}:1&required_Z=${mark}&same_subtree=_X,_Z&group_policy=none`,
      `resources_X=${vf}:1&required_Z=${numa}&same_subtree=_X,_Z&group_policy=isolate`,
      `resources_X=${vf}:1&resources_Y=${vf}:1&same_subtree=_X,_Y&group_policy=isolate&root_required=${mark}`,
    ]) {
      const candidates = await t.request("GET", `/allocation_candidates?${query}`);
      const res = await explain(query);
      expect(res.status, `${query}: ${res.text}`).toBe(200);
      expect(res.body.allocation_requests, query).toBe(candidates.body.allocation_requests.length);
      const stages = res.body.trees.map((s: { remaining: number }) => s.remaining);
      expect(stages, query).toEqual([...stages].sort((x, y) => y - x));
      expect(res.body.trees.at(-1).remaining > 0, query).toBe(candidates.body.allocation_requests.length > 0);
    }
  });
});
