/**
 * The differential test's own judgements that are not plain equality: a
 * limited candidates answer checked against its unlimited one, and the
 * reference's inflated amounts (docs/placement-bugs.md). Each must accept the
 * right answer and reject a wrong one, or npm run compat could hide a bug.
 */
import { describe, expect, it } from "vitest";
import { isolatedAmountsAccumulate } from "../compat/isolated-amounts.js";
import { limitedAnswerFaults, limitOf, withoutLimit } from "../compat/limited.js";
import { knownBug } from "../compat/exceptions.js";
import { Model, type Exchange } from "../compat/model.js";
import { roomBefore, usageChange } from "../compat/usage-change.js";

const summary = (root: string, used = 0) => ({ resources: { VCPU: { capacity: 8, used } }, traits: [], parent_provider_uuid: null, root_provider_uuid: root });
const single = (rp: string) => ({ allocations: { [rp]: { resources: { VCPU: 1 } } }, mappings: { "": [rp] } });
const unlimited = JSON.stringify({
  allocation_requests: [single("a"), single("b"), single("c")],
  provider_summaries: { a: summary("a"), b: summary("b"), c: summary("c") },
});

describe("a limited candidates answer", () => {
  it("reads its limit and drops it", () => {
    expect(limitOf("/allocation_candidates?resources=VCPU:1&limit=2")).toBe(2);
    expect(limitOf("/allocation_candidates?resources=VCPU:1&limit=0")).toBeUndefined();
    expect(limitOf("/resource_providers?limit=2")).toBeUndefined();
    expect(withoutLimit("/allocation_candidates?resources=VCPU:1&limit=2&required=X")).toBe("/allocation_candidates?resources=VCPU:1&required=X");
  });

  it("is valid as any N of the unlimited candidates with their trees' summaries", () => {
    const limited = JSON.stringify({ allocation_requests: [single("c"), single("a")], provider_summaries: { a: summary("a"), c: summary("c") } });
    expect(limitedAnswerFaults("ours", limited, unlimited, 2)).toEqual([]);
  });

  it("is faulted for a wrong count, a candidate of its own, or a summary too many or changed", () => {
    const aspects = (body: object, limit = 2) => limitedAnswerFaults("ours", JSON.stringify(body), unlimited, limit).map((f) => f.aspect);
    expect(aspects({ allocation_requests: [single("a")], provider_summaries: { a: summary("a") } })).toEqual([
      "ours's limited answer: allocation_requests length",
    ]);
    expect(aspects({ allocation_requests: [single("a"), single("z")], provider_summaries: { a: summary("a") } })[0]).toMatch(/not in the unlimited answer/);
    expect(aspects({ allocation_requests: [single("a"), single("a")], provider_summaries: { a: summary("a") } })[0]).toMatch(/more often than there/);
    expect(aspects({ allocation_requests: [single("a"), single("b")], provider_summaries: { a: summary("a"), b: summary("b"), c: summary("c") } })).toEqual([
      "ours's limited answer: provider summaries of trees no kept request uses",
    ]);
    expect(aspects({ allocation_requests: [single("a"), single("b")], provider_summaries: { a: summary("a", 1), b: summary("b") } })).toEqual([
      "ours's limited answer: a provider summary unlike the unlimited answer's",
    ]);
  });
});

describe("the reference's inflated amounts under isolate", () => {
  const path = "/allocation_candidates?resources=VCPU:1&resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate";
  const candidate = (x: number, y: number) => ({
    allocations: { x: { resources: { VCPU: x } }, y: { resources: { VCPU: y } } },
    mappings: { "": ["x"], "1": ["x"], "2": ["y"] },
  });
  const answer = (...requests: object[]) => JSON.stringify({ allocation_requests: requests, provider_summaries: {} });

  it("is recognised when ours takes what the groups ask and the reference more", () => {
    expect(isolatedAmountsAccumulate(path, answer(candidate(3, 1)), answer(candidate(2, 1)))).toBe(true);
  });

  it("is not when ours is the one that is wrong, when both agree, or under group_policy=none", () => {
    expect(isolatedAmountsAccumulate(path, answer(candidate(2, 1)), answer(candidate(3, 1)))).toBe(false);
    expect(isolatedAmountsAccumulate(path, answer(candidate(2, 1)), answer(candidate(2, 1)))).toBe(false);
    expect(isolatedAmountsAccumulate(path.replace("isolate", "none"), answer(candidate(3, 1)), answer(candidate(2, 1)))).toBe(false);
    // A reference candidate we do not have is not this bug.
    const other = { allocations: { z: { resources: { VCPU: 3 } } }, mappings: { "": ["z"], "1": ["z"], "2": ["z"] } };
    expect(isolatedAmountsAccumulate(path, answer(candidate(3, 1), other), answer(candidate(2, 1)))).toBe(false);
  });
});

describe("the reference's overcommit under concurrent claims", () => {
  const rp = "0f6ac8a4-57a1-4b5e-9d3c-6d1f0e2b9a11";
  const claimer = "5b8e9d1c-2a3f-4e6b-8c7d-1e2f3a4b5c6d";
  /** A model whose provider `rp1` has 4 VCPU, `held` of them allocated to one consumer. */
  const modelHolding = (held: number) => {
    const model = new Model();
    model.providers.set("rp1", { sym: "rp1", name: "rp1", root: "rp1", traits: [], aggregates: [], inventories: new Map([
      ["VCPU", { total: 4, reserved: 0, min_unit: 1, max_unit: 4, step_size: 1, allocation_ratio: 1 }],
    ]) });
    model.consumers.set("c1", { sym: "c1", project: "p", user: "u", allocations: new Map([["rp1", { VCPU: held }]]) });
    return model;
  };
  const refusal = `Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource provider '${rp}'. The requested amount would exceed the capacity.`;
  const claim: Exchange = {
    label: "PUT /allocations/{consumer} new",
    request: { method: "PUT", path: `/allocations/${claimer}`, headers: {}, body: JSON.stringify({ allocations: { [rp]: { resources: { VCPU: 1 } } }, consumer_generation: null }) },
    reference: { status: 204, headers: new Headers(), text: "" },
    ours: { status: 409, headers: new Headers(), text: JSON.stringify({ errors: [{ status: 409, detail: refusal }] }) },
  };
  const judge = (model: Model, exchange: Exchange = claim) => {
    const symOf = (uuid: string) => (uuid === rp ? "rp1" : uuid);
    return knownBug(exchange, [{ aspect: "status", reference: "204", ours: "409" }], {
      retiredClasses: new Set(),
      usageChange: (e, provider, rc) => usageChange(model, symOf, e, provider, rc),
      roomBefore: (provider, rc) => roomBefore(model, symOf, provider, rc),
    })?.anchor;
  };

  it("is recognised when the agreed state leaves no room for the claim the reference took", () => {
    expect(judge(modelHolding(4))).toBe("concurrent-claims-overcommit-a-provider-under-1400s-over-capacity-rule");
  });

  it("is not when the claim fits (ours would be wrong to refuse), or once the model has dropped anything", () => {
    expect(judge(modelHolding(3))).toBeUndefined();
    const diverged = modelHolding(4);
    diverged.diverged = true;
    expect(judge(diverged)).toBeUndefined();
  });
});
