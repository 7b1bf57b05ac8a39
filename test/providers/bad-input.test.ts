/**
 * Every kind of bad input to the provider, inventory and aggregate routes
 * gets Placement's 4xx and error body, and leaves every table as it was.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { expectError, makeProvider, putInventories, snapshot } from "./support.js";

let t: Harness;
let rp: string;
let other: string;
beforeAll(async () => {
  t = await startHarness();
  rp = await makeProvider(t);
  other = await makeProvider(t);
  await putInventories(t, rp, { DISK_GB: { total: 100 } });
  await t.request("PUT", `/resource_providers/${rp}/aggregates`, { body: { aggregates: [randomUUID()], resource_provider_generation: 1 } });
});
afterAll(async () => t.close());

interface Case {
  name: string;
  method: string;
  path: () => string;
  /** A thunk: the providers the bodies mention exist only after beforeAll. */
  body?: () => unknown;
  version?: string;
  headers?: Record<string, string>;
  status: number;
  detail: string | RegExp;
}

const longName = "x".repeat(201);
const inv = () => `/resource_providers/${rp}/inventories`;
const aggs = () => `/resource_providers/${rp}/aggregates`;

const cases: Case[] = [
  // Providers.
  { name: "malformed JSON", method: "POST", path: () => "/resource_providers", body: () => '{"foo": }', status: 400, detail: "Malformed JSON:" },
  { name: "body not an object", method: "POST", path: () => "/resource_providers", body: () => ["x"], status: 400, detail: "['x'] is not of type 'object'" },
  { name: "name missing", method: "POST", path: () => "/resource_providers", body: () => ({ uuid: randomUUID() }), status: 400, detail: "'name' is a required property" },
  { name: "name of the wrong type", method: "POST", path: () => "/resource_providers", body: () => ({ name: 42 }), status: 400, detail: "42 is not of type 'string'" },
  { name: "name too long", method: "POST", path: () => "/resource_providers", body: () => ({ name: longName }), status: 400, detail: "Failed validating 'maxLength'" },
  { name: "empty name", method: "POST", path: () => "/resource_providers", body: () => ({ name: "" }), status: 400, detail: "name is required" },
  { name: "bad uuid", method: "POST", path: () => "/resource_providers", body: () => ({ name: "n", uuid: "this is not a uuid" }), status: 400, detail: "'this is not a uuid' is not a 'uuid'" },
  { name: "unknown field", method: "POST", path: () => "/resource_providers", body: () => ({ name: "n", colour: "red" }), status: 400, detail: "Additional properties are not allowed ('colour' was unexpected)" },
  { name: "bad parent uuid", method: "POST", path: () => "/resource_providers", body: () => ({ name: "n", parent_provider_uuid: "nope" }), status: 400, detail: "JSON does not validate" },
  { name: "duplicate name", method: "POST", path: () => "/resource_providers", body: () => ({ name: `rp-${rp}` }), status: 409, detail: "Conflicting resource provider name" },
  { name: "not JSON content", method: "POST", path: () => "/resource_providers", body: () => "name=x", headers: { "content-type": "text/plain" }, status: 415, detail: "The media type text/plain is not supported" },
  { name: "rename to a taken name", method: "PUT", path: () => `/resource_providers/${other}`, body: () => ({ name: `rp-${rp}` }), status: 409, detail: "Conflicting resource provider" },
  { name: "uuid in a PUT", method: "PUT", path: () => `/resource_providers/${rp}`, body: () => ({ name: "n", uuid: randomUUID() }), status: 400, detail: "Additional properties are not allowed" },
  { name: "PUT name too long", method: "PUT", path: () => `/resource_providers/${rp}`, body: () => ({ name: longName }), status: 400, detail: "Failed validating 'maxLength'" },
  { name: "parent that does not exist", method: "PUT", path: () => `/resource_providers/${rp}`, body: () => ({ name: `rp-${rp}`, parent_provider_uuid: randomUUID() }), status: 400, detail: "parent provider UUID does not exist." },
  { name: "list with a bad uuid", method: "GET", path: () => "/resource_providers?uuid=spameggs", status: 400, detail: "Invalid query string parameters" },
  { name: "list with an unknown filter", method: "GET", path: () => "/resource_providers?spam=eggs", status: 400, detail: "Invalid query string parameters" },
  { name: "NUL in a name", method: "POST", path: () => "/resource_providers", body: () => ({ name: "a\u0000b" }), status: 400, detail: "JSON does not validate" },
  { name: "NUL in a provider path", method: "GET", path: () => "/resource_providers/a%00b", status: 404, detail: "No resource provider with uuid" },
  { name: "NUL in an inventory path", method: "GET", path: () => "/resource_providers/a%00b/inventories", status: 404, detail: "No resource provider with uuid" },
  { name: "NUL in a class path", method: "DELETE", path: () => `${inv()}/A%00B`, status: 404, detail: "No such resource class" },
  { name: "NUL in an aggregates path", method: "PUT", path: () => "/resource_providers/a%00b/aggregates", body: () => [], status: 404, detail: "No resource provider with uuid" },
  { name: "delete unknown provider", method: "DELETE", path: () => `/resource_providers/${randomUUID()}`, status: 404, detail: "found for delete" },
  // Inventories.
  { name: "inventories without generation", method: "PUT", path: inv, body: () => ({ inventories: {} }), status: 400, detail: "'resource_provider_generation' is a required property" },
  { name: "generation as a string", method: "PUT", path: inv, body: () => ({ resource_provider_generation: "2", inventories: {} }), status: 400, detail: "'2' is not of type 'integer'" },
  { name: "inventories as a list", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: [] }), status: 400, detail: "is not of type 'object'" },
  { name: "lower-case class", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { house: { total: 1 } } }), status: 400, detail: "Unknown resource class in inventory for resource provider" },
  { name: "unknown class", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { HOUSE: { total: 1 } } }), status: 400, detail: "Unknown resource class in inventory" },
  { name: "zero total", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { VCPU: { total: 0 } } }), status: 400, detail: "0 is less than the minimum of 1" },
  { name: "total above 32 bits", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { VCPU: { total: 2147483648 } } }), status: 400, detail: "Failed validating 'maximum'" },
  { name: "fractional total", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { VCPU: { total: 1.5 } } }), status: 400, detail: "1.5 is not of type 'integer'" },
  { name: "negative reserved", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { VCPU: { total: 4, reserved: -1 } } }), status: 400, detail: "-1 is less than the minimum of 0" },
  { name: "allocation ratio too big", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { VCPU: { total: 4, allocation_ratio: 3.40282e39 } } }), status: 400, detail: "Failed validating 'maximum'" },
  { name: "unknown inventory field", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { VCPU: { total: 4, colour: "red" } } }), status: 400, detail: "Additional properties are not allowed" },
  { name: "reserved above total", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 2, inventories: { VCPU: { total: 4, reserved: 5 } } }), status: 400, detail: "Unable to update inventory for resource provider" },
  { name: "stale generation", method: "PUT", path: inv, body: () => ({ resource_provider_generation: 0, inventories: {} }), status: 409, detail: "resource provider generation conflict" },
  { name: "POST with a bad class name", method: "POST", path: inv, body: () => ({ resource_class: "bad_class", total: 1 }), status: 400, detail: "does not match" },
  { name: "POST with total as a string", method: "POST", path: inv, body: () => ({ resource_class: "VCPU", total: "4" }), status: 400, detail: "'4' is not of type 'integer'" },
  { name: "POST malformed JSON", method: "POST", path: inv, body: () => "{", status: 400, detail: "Malformed JSON" },
  { name: "PUT one without generation", method: "PUT", path: () => `${inv()}/DISK_GB`, body: () => ({ total: 4 }), status: 400, detail: "'resource_provider_generation' is a required property" },
  { name: "inventories of an unknown provider", method: "PUT", path: () => `/resource_providers/${randomUUID()}/inventories`, body: () => ({}), status: 404, detail: "No resource provider with uuid" },
  // Aggregates.
  { name: "aggregates not uuids", method: "PUT", path: aggs, body: () => ({ aggregates: ["harry"], resource_provider_generation: 2 }), status: 400, detail: "'harry' is not a 'uuid'" },
  { name: "aggregates twice", method: "PUT", path: aggs, body: () => ({ aggregates: [rp, rp].map(() => "f918801a-5e54-4bee-9095-09a9d0c786b8"), resource_provider_generation: 2 }), status: 400, detail: "has non-unique elements" },
  { name: "old payload at 1.19", method: "PUT", path: aggs, body: () => [randomUUID()], status: 400, detail: "is not of type 'object'" },
  { name: "new payload at 1.18", method: "PUT", path: aggs, version: "1.18", body: () => ({ aggregates: [], resource_provider_generation: 2 }), status: 400, detail: "is not of type 'array'" },
  { name: "aggregates without generation", method: "PUT", path: aggs, body: () => ({ aggregates: [] }), status: 400, detail: "'resource_provider_generation' is a required property" },
  { name: "aggregates stale generation", method: "PUT", path: aggs, body: () => ({ aggregates: [], resource_provider_generation: 0 }), status: 409, detail: "generation already changed" },
];

describe("bad input", () => {
  it.each(cases)("$name: $status with Placement's error body", async (c) => {
    const res = await t.request(c.method, c.path(), { body: c.body?.(), version: c.version, headers: c.headers });
    // Codes exist from 1.23; the 409s carry their specific code, checked in the route tests.
    const code = c.version && c.version < "1.23" ? null : c.status === 409 ? res.body?.errors?.[0]?.code : "placement.undefined_code";
    expectError(res, c.status, c.detail, code);
  });

  it("leaves every table unchanged", async () => {
    const before = await snapshot(t);
    for (const c of cases) {
      const res = await t.request(c.method, c.path(), { body: c.body?.(), version: c.version, headers: c.headers });
      expect(res.status, c.name).toBe(c.status);
    }
    expect(await snapshot(t)).toEqual(before);
  });
});
