/**
 * Placement's options for candidates: max_allocation_candidates,
 * allocation_candidates_generation_strategy and randomize_allocation_candidates,
 * on one tree-shaped data set (so the general engine runs, not the flat path).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../src/config.js";
import { startHarness, type Harness } from "../support/harness.js";
import { custom, Data, type Provider } from "./data.js";

const VF = custom("VF");
const harnesses: Harness[] = [];
let roots: Provider[] = [];

async function harness(config: Partial<Config>): Promise<Harness> {
  const t = await startHarness({ config });
  harnesses.push(t);
  const d = new Data(t);
  roots = [];
  // Three trees with two VF children each: two candidates per tree for one VF.
  for (let i = 0; i < 3; i++) {
    const root = await d.provider();
    roots.push(root);
    for (let k = 0; k < 2; k++) await d.provider({ parent: root, inventory: { [VF]: 4 } });
  }
  return t;
}

const rootsOf = (res: { body: any }) =>
  res.body.allocation_requests.map((a: any) => res.body.provider_summaries[Object.keys(a.allocations)[0]].root_provider_uuid);

afterAll(async () => {
  for (const t of harnesses) await t.close();
});

describe("generation options", () => {
  let depth: Harness;
  let breadth: Harness;
  beforeAll(async () => {
    depth = await harness({ PLACEMENT_MAX_ALLOCATION_CANDIDATES: 3 });
    breadth = await harness({ PLACEMENT_MAX_ALLOCATION_CANDIDATES: 3, PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY: "breadth-first" });
  });

  it("caps generation at max_allocation_candidates, depth-first: whole trees first", async () => {
    const res = await depth.request("GET", `/allocation_candidates?resources=${VF}:1`);
    const r = rootsOf(res);
    expect(r).toHaveLength(3);
    expect(r[0]).toBe(r[1]);
    expect(r[2]).not.toBe(r[0]);
    // A smaller limit still wins.
    expect((await depth.request("GET", `/allocation_candidates?resources=${VF}:1&limit=1`)).body.allocation_requests).toHaveLength(1);
  });

  it("breadth-first takes one candidate from each tree in turn", async () => {
    const res = await breadth.request("GET", `/allocation_candidates?resources=${VF}:1`);
    expect(new Set(rootsOf(res)).size).toBe(3);
  });
});

describe("randomize_allocation_candidates", () => {
  it("returns every candidate, in varying order, and a random sample under a limit", async () => {
    const t = await harness({ PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: true });
    const orders = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const res = await t.request("GET", `/allocation_candidates?resources=${VF}:1`);
      expect(res.body.allocation_requests).toHaveLength(6);
      orders.add(JSON.stringify(res.body.allocation_requests));
    }
    expect(orders.size).toBeGreaterThan(1);
    const limited = await t.request("GET", `/allocation_candidates?resources=${VF}:1&limit=2`);
    expect(limited.body.allocation_requests).toHaveLength(2);
  });
});
