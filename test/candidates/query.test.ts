/** The shared query parser: request groups, request-wide parameters, and Placement's 400s per microversion. */
import { describe, expect, it } from "vitest";
import { PlacementError } from "../../src/http/errors.js";
import { Microversion } from "../../src/http/microversion.js";
import { parseProviderListQuery } from "../../src/query/provider-filters.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";

const mv = (v: string) => {
  const [a, b] = v.split(".").map(Number);
  return new Microversion(a, b);
};
const pairs = (qs: string) => [...new URLSearchParams(qs).entries()];
const parse = (qs: string, v = "1.39") => parseCandidatesQuery(pairs(qs), mv(v));

function error(fn: () => unknown): PlacementError {
  try {
    fn();
  } catch (err) {
    if (err instanceof PlacementError) return err;
    throw err;
  }
  throw new Error("expected a PlacementError");
}

const AGG = "3ea5a0a4-7a2a-4e06-9e0b-0f6a7b8d1e11";
const AGG2 = "7d0b8c84-3b4b-4f2e-8f3d-5c2a5f0e6a22";

describe("request groups", () => {
  it("parses groups by suffix in order of appearance", () => {
    const q = parse(`resources=VCPU:1&resources_NET=VF:2&required_NET=A,!B&member_of_NET=in:${AGG},${AGG2}&group_policy=none`);
    expect(q.groups.map((g) => g.suffix)).toEqual(["", "_NET"]);
    const net = q.groups[1];
    expect(net.useSameProvider).toBe(true);
    expect([...net.resources]).toEqual([["VF", 2]]);
    expect(net.traits.required).toEqual([["A"]]);
    expect([...net.traits.forbidden]).toEqual(["B"]);
    expect(net.aggregates.memberOf).toEqual([[AGG, AGG2]]);
  });

  it("ANDs repeated required from 1.39 and keeps only the last before", () => {
    expect(parse("resources=VCPU:1&required=A&required=in:B,C").groups[0].traits.required).toEqual([["A"], ["B", "C"]]);
    expect(parse("resources=VCPU:1&required=A&required=B", "1.38").groups[0].traits.required).toEqual([["B"]]);
    expect(error(() => parse("resources=VCPU:1&required=in:A,B", "1.38")).detail).toContain(
      "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39.",
    );
  });

  it("reads limit, group_policy, root_required and same_subtree", () => {
    const q = parse("resources_A=VCPU:1&resources_B=VCPU:1&group_policy=isolate&limit=5&root_required=X,!Y&same_subtree=_A,_B");
    expect(q.params).toMatchObject({ limit: 5, groupPolicy: "isolate", rootRequired: ["X"], rootForbidden: ["Y"], sameSubtrees: [["_A", "_B"]] });
  });
});

describe("Placement's 400s", () => {
  it("validates keys per microversion in jsonschema's words", () => {
    expect(error(() => parse("resources=VCPU:1&limit=5", "1.15")).detail).toContain("'limit' was unexpected");
    expect(error(() => parse("resources=VCPU:1&limit=0", "1.16")).detail).toContain("Failed validating 'pattern'");
    expect(error(() => parse("", "1.10")).detail).toContain("'resources' is a required property");
    expect(error(() => parse("resources=VCPU:1&root_required=X", "1.34")).detail).toContain(
      "'root_required' does not match any of the regexes",
    );
    expect(error(() => parse("resources_X=VCPU:1", "1.32")).detail).toContain("'resources_X' does not match any of the regexes");
  });

  it("words bad resources values as Placement does", () => {
    expect(error(() => parse("resources=")).detail).toContain("Got: empty string.");
    expect(error(() => parse("resources=VCPU")).detail).toContain("Got: VCPU.");
    expect(error(() => parse("resources=VCPU:fred")).detail).toBe("Requested resource VCPU expected positive integer amount. Got: fred.");
    expect(error(() => parse("resources=VCPU:-2")).detail).toBe("Requested resource VCPU requires amount >= 1. Got: -2.");
  });

  it("checks member_of values and their microversions", () => {
    expect(error(() => parse("resources=VCPU:1&member_of=nope")).detail).toContain(
      "Expected 'member_of' parameter to contain valid UUID(s).",
    );
    expect(error(() => parse(`resources=VCPU:1&member_of=${AGG},${AGG2}`)).detail).toContain("must be prefixed with the 'in:' or '!in:'");
    expect(error(() => parse(`resources=VCPU:1&member_of=${AGG}&member_of=${AGG2}`, "1.23")).detail).toBe(
      "Multiple member_of parameters are not supported",
    );
    expect(error(() => parse(`resources=VCPU:1&member_of=!${AGG}`, "1.31")).detail).toContain("Forbidden member_of parameters are not supported");
  });

  it("rejects orphaned filters, missing group_policy and conflicting traits", () => {
    expect(error(() => parse("resources=VCPU:1&required1=A", "1.35")).detail).toContain("orphaned traits keys: required1");
    expect(error(() => parse(`resources=VCPU:1&member_of1=${AGG}`, "1.35")).detail).toContain("orphaned member_of keys: member_of1");
    expect(error(() => parse("resources1=VCPU:1&resources2=VCPU:1")).detail).toContain('The "group_policy" parameter is required');
    expect(error(() => parse("resources=VCPU:1&required=A,!A")).detail).toBe(
      "Conflicting required and forbidden traits found in the following traits keys: required: (A)",
    );
  });

  it("gives error codes for root_required and same_subtree mistakes", () => {
    const dup = error(() => parse("resources=VCPU:1&root_required=A&root_required=B"));
    expect(dup.code).toBe("placement.query.duplicate_key");
    const conflict = error(() => parse("resources=VCPU:1&root_required=A,!A"));
    expect(conflict).toMatchObject({ code: "placement.query.bad_value", detail: "Conflicting required and forbidden traits found in root_required: A" });
    expect(error(() => parse("resources=VCPU:1&same_subtree=_A,")).code).toBe("placement.query.bad_value");
    expect(error(() => parse("resources=VCPU:1&required_R=X")).detail).toBe(
      "Resourceless suffixed group request should be specified in `same_subtree` query param: bad group(s) - ['_R'].",
    );
    expect(error(() => parse("resources=VCPU:1&same_subtree=_Z")).detail).toBe(
      "Real suffixes should be specified in `same_subtree`: ['_Z'] not found in [''].",
    );
    expect(error(() => parse("required_R=X&same_subtree=_R")).code).toBe("placement.query.missing_value");
  });
});

describe("GET /resource_providers filters", () => {
  it("parses the shared filters for the list, per microversion", () => {
    const f = parseProviderListQuery(pairs(`member_of=${AGG}&required=A,!B&resources=VCPU:2&in_tree=${AGG2}`), mv("1.39"));
    expect(f.aggregates?.memberOf).toEqual([[AGG]]);
    expect(f.traits?.required).toEqual([["A"]]);
    expect([...(f.resources ?? [])]).toEqual([["VCPU", 2]]);
    expect(f.inTree).toBe(AGG2);
    expect(error(() => parseProviderListQuery(pairs("required=A"), mv("1.17"))).detail).toContain("'required' was unexpected");
    expect(error(() => parseProviderListQuery(pairs("resources=VCPU:1"), mv("1.3"))).detail).toContain("Invalid query string parameters");
  });
});
