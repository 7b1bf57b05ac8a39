/**
 * The provider rules written once (src/services/rules/): the in-memory
 * predicates on plain data, no database. Their SQL halves are exercised by
 * every candidates and provider-list test through the statements that use
 * them, and kept equal to these by test/candidates/contract.test.ts.
 */
import { describe, expect, it } from "vitest";
import { canTake, canTakeSum, capacityOf, hasRoomFor, unitsAllow } from "../../src/services/rules/capacity.js";
import { allowTogether, allows, expressionSql, idsSql } from "../../src/services/rules/memberships.js";

describe("capacity", () => {
  it("is Python's int((total - reserved) * allocation_ratio)", () => {
    expect(capacityOf({ total: 10, reserved: 1, allocationRatio: 1.5 })).toBe(13);
    expect(capacityOf({ total: 3, reserved: 0, allocationRatio: 0.7 })).toBe(2);
    // int() truncates toward zero, where floor would go below it.
    expect(capacityOf({ total: 1, reserved: 2, allocationRatio: 0.5 })).toBe(0);
  });

  const inv = { capacity: 12, used: 2, minUnit: 2, maxUnit: 8, stepSize: 2 };
  it("takes an amount within the units and the room left", () => {
    expect(canTake(inv, 4)).toBe(true);
    expect(canTake(inv, 1)).toBe(false); // below min_unit
    expect(canTake(inv, 3)).toBe(false); // off the step
    expect(canTake(inv, 10)).toBe(false); // above max_unit
    expect(unitsAllow(inv, 8)).toBe(true);
    expect(hasRoomFor(inv, 10)).toBe(true);
    expect(hasRoomFor(inv, 11)).toBe(false);
  });

  it("checks a merged sum against max_unit and the room left", () => {
    expect(canTakeSum(inv, 8)).toBe(true);
    expect(canTakeSum(inv, 10)).toBe(false); // each part may fit, the sum is above max_unit
    expect(canTakeSum({ ...inv, maxUnit: 20 }, 11)).toBe(false); // 2 used + 11 > 12
  });
});

describe("membership expressions (traits, aggregates)", () => {
  const traits = new Map<number, Set<number>>([
    [1, new Set([10])],
    [2, new Set([20, 30])],
  ]);
  const of = (p: number) => traits.get(p);

  it("needs one of every any-of list and none of the forbidden, on one provider", () => {
    expect(allows(of(2), { anyOf: [[20], [10, 30]], forbidden: [] })).toBe(true);
    expect(allows(of(2), { anyOf: [[20], [10]], forbidden: [] })).toBe(false);
    expect(allows(of(2), { anyOf: [], forbidden: [30] })).toBe(false);
    expect(allows(undefined, { anyOf: [], forbidden: [30] })).toBe(true);
    expect(allows(undefined, { anyOf: [[10]], forbidden: [] })).toBe(false);
    // An any-of list of only unknown members (an aggregate nobody is in) matches nothing.
    expect(allows(of(1), { anyOf: [[]], forbidden: [] })).toBe(false);
  });

  it("lets providers meet the expression together", () => {
    expect(allowTogether([1, 2], of, { anyOf: [[10], [20]], forbidden: [] })).toBe(true);
    expect(allowTogether([1], of, { anyOf: [[10], [20]], forbidden: [] })).toBe(false);
    expect(allowTogether([1], of, { anyOf: [[20, 10]], forbidden: [] })).toBe(true);
  });

  it("fails when any chosen provider has a forbidden trait", () => {
    expect(allowTogether([1, 2], of, { anyOf: [[10]], forbidden: [30] })).toBe(false);
    expect(allowTogether([1], of, { anyOf: [[10]], forbidden: [30] })).toBe(true);
  });

  it("writes one EXISTS per any-of list and one NOT EXISTS for the forbidden, ids as checked integers", () => {
    const sql = expressionSql("traits", "rp.id", { anyOf: [[1, 2], [3]], forbidden: [4] }, idsSql);
    expect(sql).toHaveLength(3);
    expect(sql[0]).toContain("resource_provider_traits m WHERE m.resource_provider_id = rp.id AND m.trait_id = ANY(ARRAY[1,2]::int[])");
    expect(sql[2]).toMatch(/^NOT EXISTS/);
    expect(() => idsSql([1, Number.NaN])).toThrow();
  });
});
