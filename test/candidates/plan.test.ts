/** The general plan's pure planning (plan.ts) on plain data, as general-source.ts hands it what it fetched: no database. */
import { describe, expect, it } from "vitest";
import { Microversion } from "../../src/http/microversion.js";
import { parseCandidatesQuery, type CandidatesQuery } from "../../src/query/request-groups.js";
import { EMPTY, planBatch, resourcelessProviders, type Members, type Planned, type Scope } from "../../src/services/candidates/plan.js";
import type { IdsByName } from "../../src/services/candidates/sql/names.js";
import type { TreeInventory } from "../../src/services/candidates/sql/tree-loads.js";

const VCPU = 0;
const DISK = 2;
const VF = 9;
const AVX = 100;
const SLOW = 101;
const SHARES = 102;
const AGG = 7;
const AGG_UUID = "00000000-0000-4000-8000-000000000007";

const names = (over: Partial<IdsByName> = {}): IdsByName => ({
  resourceClasses: new Map([["VCPU", VCPU], ["DISK_GB", DISK], ["SRIOV_NET_VF", VF]]),
  traits: new Map([["HW_CPU_X86_AVX2", AVX], ["CUSTOM_SLOW", SLOW], ["MISC_SHARES_VIA_AGGREGATE", SHARES]]),
  aggregates: new Map([[AGG_UUID, AGG]]),
  treeRoots: new Map(),
  hasTrees: false,
  hasSharing: false,
  ...over,
});

const query = (q: string): CandidatesQuery => parseCandidatesQuery([...new URLSearchParams(q).entries()], Microversion.from("1.39"));

const inv = (providerId: number, resourceClassId: number, capacity: number, used = 0): TreeInventory => ({
  providerId,
  resourceClassId,
  capacity,
  used,
  minUnit: 1,
  maxUnit: capacity,
  stepSize: 1,
});

function members(over: Partial<Members> = {}): Members {
  const sharing = over.sharing ?? [];
  return { traitsOf: new Map(), aggsOf: new Map(), sharing, isSharing: (rp) => sharing.includes(rp), anchorsOf: new Map(), resourceless: new Map(), ...over };
}

/** A batch whose anchors are `roots`, with each provider's root given as [provider, root] pairs. */
const scope = (inventories: TreeInventory[], rootPairs: Array<[number, number]>, roots: number[]): Scope => ({
  inventories,
  rootOf: new Map(rootPairs),
  anchors: new Set(roots),
});

function planned(result: Planned | typeof EMPTY): Planned {
  if (result === EMPTY) throw new Error("expected a plan");
  return result;
}

/** Per group, anchor to the providers of each option. */
const optionProviders = (p: Planned) =>
  p.plans.map((plan) => (plan.kind === "options" ? [...plan.byAnchor].map(([anchor, opts]) => [anchor, opts.map((o) => o.providers)]) : plan.kind));

describe("planBatch", () => {
  it("keeps, on flat providers, only those whose inventory can take the amount, by anchor", () => {
    const p = planned(
      planBatch(query("resources=VCPU:4"), names(), new Map(), members(), scope([inv(1, VCPU, 8), inv(2, VCPU, 8, 6), inv(3, VCPU, 4)], [[1, 1], [2, 2], [3, 3]], [1, 2, 3])),
    );
    expect(optionProviders(p)).toEqual([[[1, [[1]]], [3, [[3]]]]]);
  });

  it("plans nothing (EMPTY) when some requested amount fits nowhere in the batch", () => {
    expect(planBatch(query("resources=VCPU:1,DISK_GB:10"), names(), new Map(), members(), scope([inv(1, VCPU, 8)], [[1, 1]], [1]))).toBe(EMPTY);
  });

  it("applies required and forbidden traits and member_of to each provider", () => {
    const m = members({
      traitsOf: new Map([[1, new Set([AVX])], [2, new Set([AVX, SLOW])], [3, new Set<number>()]]),
      aggsOf: new Map([[1, new Set([AGG])], [2, new Set([AGG])], [3, new Set([AGG])]]),
    });
    const s = scope([inv(1, VCPU, 8), inv(2, VCPU, 8), inv(3, VCPU, 8), inv(4, VCPU, 8)], [[1, 1], [2, 2], [3, 3], [4, 4]], [1, 2, 3, 4]);
    expect(optionProviders(planned(planBatch(query("resources=VCPU:1&required=HW_CPU_X86_AVX2,!CUSTOM_SLOW"), names(), new Map(), m, s)))).toEqual([
      [[1, [[1]]]],
    ]);
    expect(optionProviders(planned(planBatch(query(`resources=VCPU:1&member_of=${AGG_UUID}`), names(), new Map(), m, s)))).toEqual([
      [[1, [[1]]], [2, [[2]]], [3, [[3]]]],
    ]);
  });

  it("anchors a granular group's options at the root of the tree of each provider that has everything", () => {
    // Tree 10 with VF children 11 and 12 (12 full); tree 20 with child 21.
    const s = scope([inv(11, VF, 8), inv(12, VF, 8, 8), inv(21, VF, 8)], [[10, 10], [11, 10], [12, 10], [20, 20], [21, 20]], [10, 20]);
    const p = planned(planBatch(query("resources1=SRIOV_NET_VF:1"), names({ hasTrees: true }), new Map(), members(), s));
    expect(optionProviders(p)).toEqual([[[10, [[11]]], [20, [[21]]]]]);
    expect(p.trees).toBe(true);
  });

  it("lets the unsuffixed group spread over its tree and a sharing provider anchoring into it", () => {
    // Tree 1 (VCPU on root 1), tree 2 (VCPU on 2); sharing storage 5 (its own tree) in the aggregate of tree 1 only.
    const m = members({ sharing: [5], anchorsOf: new Map([[5, [1, 5]]]), traitsOf: new Map([[5, new Set([SHARES])]]) });
    const s = scope([inv(1, VCPU, 8), inv(2, VCPU, 8), inv(5, DISK, 1000)], [[1, 1], [2, 2], [5, 5]], [1, 2]);
    const p = planned(planBatch(query("resources=VCPU:1,DISK_GB:100"), names({ hasTrees: true, hasSharing: true }), new Map(), m, s));
    expect(p.plans).toHaveLength(1);
    const plan = p.plans[0];
    if (plan.kind !== "spread") throw new Error("expected a spread plan");
    // Only tree 1 can get DISK_GB (from 5); tree 2 has none, and 5's own tree is not in this batch.
    expect([...plan.byAnchor.keys()]).toEqual([1]);
    expect([...plan.byAnchor.get(1)!].map(([rc, rrs]) => [rc, rrs.map((rr) => rr.providerId)])).toEqual([
      [VCPU, [1]],
      [DISK, [5]],
    ]);
  });

  it("drops anchors whose root fails root_required, and keeps in_tree to its tree", () => {
    const m = members({ traitsOf: new Map([[2, new Set([AVX])]]) });
    const s = scope([inv(1, VCPU, 8), inv(2, VCPU, 8)], [[1, 1], [2, 2]], [1, 2]);
    expect(optionProviders(planned(planBatch(query("resources=VCPU:1&root_required=HW_CPU_X86_AVX2"), names(), new Map(), m, s)))).toEqual([[[2, [[2]]]]]);
    const pinned = query("resources=VCPU:1&in_tree=00000000-0000-4000-8000-000000000001");
    expect(optionProviders(planned(planBatch(pinned, names(), new Map([["", 1]]), members(), s)))).toEqual([[[1, [[1]]]]]);
  });

  it("takes a resourceless group's providers from what was fetched (Members.resourceless), anchored in the batch", () => {
    const q = query("resources1=VCPU:1&required2=HW_CPU_X86_AVX2&group_policy=none&same_subtree=1,2");
    const m = members({ traitsOf: new Map([[2, new Set([AVX])], [3, new Set([AVX])]]) });
    const wanted = resourcelessProviders(q, names(), m);
    expect([...wanted.values()]).toEqual([[2, 3]]);
    m.resourceless = new Map([...wanted].map(([g, ids]) => [g, ids.map((rp): [number, number] => [rp, rp])]));
    const p = planned(planBatch(q, names(), new Map(), m, scope([inv(1, VCPU, 8), inv(2, VCPU, 8)], [[1, 1], [2, 2]], [1, 2])));
    // Provider 3 is not in this batch: group 2 is met at anchor 2 only, where group 1 is too.
    expect(optionProviders(p)).toEqual([[[1, [[1]]], [2, [[2]]]], [[2, [[2]]]]]);
  });

  it("finds nothing for a resourceless group without positive filters", () => {
    const q = query("resources1=VCPU:1&required2=!HW_CPU_X86_AVX2&group_policy=none&same_subtree=1,2");
    expect([...resourcelessProviders(q, names(), members()).values()]).toEqual([]);
    expect(planBatch(q, names(), new Map(), members(), scope([inv(1, VCPU, 8)], [[1, 1]], [1]))).toBe(EMPTY);
  });
});
