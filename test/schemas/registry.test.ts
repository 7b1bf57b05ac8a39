/**
 * The schema registry (src/schemas/index.ts) is what the routes validate
 * against: every operation it names is a real one (policy-defaults lists
 * them all), and at the first microversion of each table entry the route
 * answers a probe that no schema accepts with exactly the message that
 * entry's schema gives (so a route validating with another schema, or at
 * another version, fails here).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_RULES } from "../../src/auth/policy-defaults.js";
import { PlacementError } from "../../src/http/errors.js";
import { Microversion } from "../../src/http/microversion.js";
import { validateBody } from "../../src/http/validation.js";
import { validateQuery } from "../../src/query/query-string.js";
import { OPERATION_SCHEMAS, type Versioned } from "../../src/schemas/index.js";
import { versioned } from "../../src/schemas/versioned.js";
import { startHarness, type Harness } from "../support/harness.js";
import { z } from "zod";

let t: Harness;
let rp: string;
beforeAll(async () => {
  t = await startHarness();
  rp = randomUUID();
  const made = await t.request("POST", "/resource_providers", { body: { name: `schemas-${rp}`, uuid: rp } });
  expect(made.status).toBe(200);
});
afterAll(async () => t.close());

/** The message a validator throws for `input`. */
function failure(validate: () => unknown): string {
  try {
    validate();
  } catch (err) {
    // The error body folds the message's line breaks, as Placement's (webob's) does.
    if (err instanceof PlacementError) return fold(err.detail);
    throw err;
  }
  throw new Error("the probe passed validation");
}

const fold = (text: string) => text.replace(/\s+/g, " ").trim();

/**
 * A body no schema accepts, shaped by the entry: an object schema's own keys,
 * each of a type none of them takes, so an older or newer schema of the same
 * table (other keys) answers with another message; else one unknown key.
 */
function probeBody(schema: z.ZodType): unknown {
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  if (!shape) return { probe_that_no_schema_allows: 1 };
  return Object.fromEntries(Object.keys(shape).map((k) => [k, [[]]]));
}
const PROBE_QUERY: Array<[string, string]> = [["probe_that_no_schema_allows", "1"]];

function concretePath(template: string): string {
  const values: Record<string, string> = { uuid: rp, consumer_uuid: randomUUID(), name: "CUSTOM_SCHEMA_PROBE", resource_class: "VCPU" };
  return template.replace(/\{(\w+)\}/g, (_, p: string) => values[p]);
}

const cases = (part: "body" | "query") =>
  Object.entries(OPERATION_SCHEMAS).flatMap(([operation, tables]) => {
    const table: Versioned | undefined = tables[part];
    return (table?.entries ?? []).map((entry) => ({ operation, version: entry.from, schema: entry.schema }));
  });

it("names only operations the API has", () => {
  const operations = new Set(API_RULES.flatMap((r) => r.operations));
  expect(Object.keys(OPERATION_SCHEMAS).filter((op) => !operations.has(op))).toEqual([]);
});

describe("each route validates its body with the registry's table", () => {
  it.each(cases("body"))("$operation at $version", async ({ operation, version, schema }) => {
    const [method, template] = operation.split(" ");
    // POST /claims validates its query first: give it one that passes.
    const query = operation === "POST /claims" ? "?resources=VCPU:1" : "";
    const body = probeBody(schema);
    const res = await t.request(method, `${concretePath(template)}${query}`, { version, body });
    expect(res.status, res.text).toBe(400);
    expect(fold(res.body.errors[0].detail)).toContain(failure(() => validateBody(schema, body)));
  });
});

describe("each route validates its query string with the registry's table", () => {
  it.each(cases("query"))("$operation at $version", async ({ operation, version, schema }) => {
    const [method, template] = operation.split(" ");
    const res = await t.request(method, `${concretePath(template)}?probe_that_no_schema_allows=1`, { version, body: method === "POST" ? {} : undefined });
    expect(res.status, res.text).toBe(400);
    expect(fold(res.body.errors[0].detail)).toContain(failure(() => validateQuery(schema, PROBE_QUERY)));
  });
});

describe("versioned tables", () => {
  const A = z.string();
  const B = z.number();
  const table = versioned([
    { from: "1.2", schema: A },
    { from: "1.19", schema: B },
  ], { until: "1.30" });

  it("takes each entry from its version until the next", () => {
    expect(table.at(Microversion.from("1.2"))).toBe(A);
    expect(table.at(Microversion.from("1.18"))).toBe(A);
    expect(table.at(Microversion.from("1.19"))).toBe(B);
    expect(table.at(Microversion.from("1.29"))).toBe(B);
  });

  it("has no schema before its first entry or from its end", () => {
    expect(() => table.at(Microversion.from("1.1"))).toThrow(/before microversion 1.2/);
    expect(() => table.at(Microversion.from("1.30"))).toThrow(/from microversion 1.30/);
  });

  it("refuses entries out of order", () => {
    expect(() => versioned([{ from: "1.19", schema: A }, { from: "1.2", schema: B }])).toThrow(/out of order/);
  });
});
