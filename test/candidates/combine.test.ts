/** The pure combination rules of the candidates engine, on plain data: no database. */
import { describe, expect, it } from "vitest";
import {
  candidateKey,
  consolidate,
  inSameSubtree,
  mappingsOf,
  mergeGroups,
  roundRobin,
  sortByKey,
  spreadOptions,
  type Capacity,
  type GroupOption,
  type MergeRules,
} from "../../src/services/candidates/combine.js";

const VF = 1;
const CPU = 2;
const opt = (suffix: string, provider: number, rc = VF, amount = 1): GroupOption => ({
  suffix,
  sameProvider: suffix !== "",
  resources: [{ providerId: provider, resourceClassId: rc, amount }],
  providers: [provider],
});
const plenty: Capacity = { capacity: 100, used: 0, maxUnit: 100 };
const rules = (over: Partial<MergeRules> = {}): MergeRules => ({
  isolate: false,
  sameSubtrees: [],
  parentOf: () => null,
  capacityOf: () => plenty,
  ...over,
});
const take = <T>(it: Iterable<T>, n: number): T[] => {
  const out: T[] = [];
  for (const x of it) {
    out.push(x);
    if (out.length >= n) break;
  }
  return out;
};

describe("spreadOptions", () => {
  it("chooses one provider per class and keeps only trait-satisfying choices", () => {
    const traits = new Map([[2, new Set([7])]]);
    const perClass = [
      [
        { providerId: 1, resourceClassId: CPU, amount: 1 },
        { providerId: 2, resourceClassId: CPU, amount: 1 },
      ],
      [{ providerId: 3, resourceClassId: VF, amount: 2 }],
    ];
    const all = [...spreadOptions("", perClass, (p) => traits.get(p), [], new Set())];
    expect(all.map((o) => o.providers)).toEqual([
      [1, 3],
      [2, 3],
    ]);
    const withTrait = [...spreadOptions("", perClass, (p) => traits.get(p), [[7]], new Set())];
    expect(withTrait.map((o) => o.providers)).toEqual([[2, 3]]);
    const forbidden = [...spreadOptions("", perClass, (p) => traits.get(p), [], new Set([7]))];
    expect(forbidden.map((o) => o.providers)).toEqual([[1, 3]]);
  });
});

describe("mergeGroups", () => {
  it("keeps granular groups on distinct providers under isolate", () => {
    const options = [
      [opt("1", 1), opt("1", 2)],
      [opt("2", 1), opt("2", 2)],
    ];
    const isolated = [...mergeGroups(9, options, rules({ isolate: true }))];
    expect(isolated.map((c) => [mappingsOf(c).get("1"), mappingsOf(c).get("2")])).toEqual([
      [[1], [2]],
      [[2], [1]],
    ]);
    expect([...mergeGroups(9, options, rules())]).toHaveLength(4);
  });

  it("adds up amounts on a shared provider and drops combinations over capacity or max_unit", () => {
    const options = [[opt("1", 1, VF, 3)], [opt("2", 1, VF, 3)]];
    const [merged] = [...mergeGroups(9, options, rules())];
    expect(merged.resources).toEqual([{ providerId: 1, resourceClassId: VF, amount: 6 }]);
    expect([...mergeGroups(9, options, rules({ capacityOf: () => ({ capacity: 8, used: 3, maxUnit: 8 }) }))]).toEqual([]);
    expect([...mergeGroups(9, options, rules({ capacityOf: () => ({ capacity: 100, used: 0, maxUnit: 5 }) }))]).toEqual([]);
  });

  it("yields nothing when a group has no option in the tree", () => {
    expect([...mergeGroups(9, [[opt("1", 1)], []], rules())]).toEqual([]);
  });

  it("enforces same_subtree with the parent map", () => {
    // 1 is the root; 2 and 3 its children; 4 under 2.
    const parents = new Map<number, number | null>([
      [1, null],
      [2, 1],
      [3, 1],
      [4, 2],
    ]);
    const parentOf = (p: number) => parents.get(p) ?? null;
    expect(inSameSubtree([2, 4], parentOf)).toBe(true);
    expect(inSameSubtree([3, 4], parentOf)).toBe(false);
    expect(inSameSubtree([1, 3, 4], parentOf)).toBe(true);
    const options = [[opt("_A", 2), opt("_A", 3)], [opt("_B", 4)]];
    const found = [...mergeGroups(1, options, rules({ sameSubtrees: [["_A", "_B"]], parentOf }))];
    expect(found.map((c) => mappingsOf(c).get("_A"))).toEqual([[2]]);
  });

  it("finds the first answers of a wide symmetric tree without enumerating the product", () => {
    // 12 children, 12 isolated groups: 12^12 products, 12! valid ones; the first 10 must come at once.
    const children = Array.from({ length: 12 }, (_, i) => i + 1);
    const options = children.map((_, g) => children.map((c) => opt(String(g + 1), c)));
    const started = performance.now();
    const first = take(mergeGroups(99, options, rules({ isolate: true })), 10);
    expect(performance.now() - started).toBeLessThan(200);
    expect(first).toHaveLength(10);
    for (const c of first) expect(new Set([...mappingsOf(c).values()].flat()).size).toBe(12);
    expect(new Set(first.map(candidateKey)).size).toBe(10);
  });
});

describe("candidateKey and consolidate", () => {
  it("treats the same claims and mappings from different anchors as one candidate", () => {
    const a = consolidate(1, [opt("", 5, VF, 2)]);
    const b = consolidate(2, [opt("", 5, VF, 2)]);
    expect(candidateKey(a)).toBe(candidateKey(b));
    expect(candidateKey(a)).not.toBe(candidateKey(consolidate(1, [opt("", 5, VF, 3)])));
    expect(candidateKey(a)).not.toBe(candidateKey(consolidate(1, [opt("_X", 5, VF, 2)])));
  });
});

describe("roundRobin", () => {
  it("interleaves sources until all are exhausted", () => {
    const out = [...roundRobin([[1, 2, 3][Symbol.iterator](), [10][Symbol.iterator](), [20, 21][Symbol.iterator]()])];
    expect(out).toEqual([1, 10, 20, 2, 21, 3]);
  });
});

describe("sortByKey", () => {
  it("orders short, long, sorted and tied lists in place like Array.prototype.sort", () => {
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) % 50;
    for (const length of [0, 1, 2, 5, 16, 17, 200]) {
      const items = Array.from({ length }, (_, i) => ({ key: random(), at: i }));
      const expected = [...items].sort((a, b) => a.key - b.key);
      const sorted = sortByKey(items, (item) => item.key);
      expect(sorted).toBe(items);
      // Stable, as the native sort: ties keep their order.
      expect(sorted).toEqual(expected);
      expect(sortByKey(sorted, (item) => item.key)).toEqual(expected);
    }
  });
});
