/** Bad input to every allocation write gets a 4xx in Placement's error format, never a 500, and changes nothing. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { createProvider, PROJECT, USER } from "./fixtures.js";

let t: Harness;
// The bodies below are built when the file is collected, before beforeAll runs.
const rp = { uuid: newUuid() };
beforeAll(async () => {
  t = await startHarness();
  await createProvider(t, { VCPU: { total: 8 }, DISK_GB: { total: 100 } }, { uuid: rp.uuid });
});
afterAll(async () => t.close());

const tables = async () => ({
  consumers: await t.sql("SELECT uuid, generation FROM consumers ORDER BY uuid"),
  allocations: await t.sql("SELECT consumer_id, resource_provider_id, resource_class_id, used FROM allocations ORDER BY id"),
  providers: await t.sql("SELECT id, generation FROM resource_providers ORDER BY id"),
  projects: await t.sql("SELECT external_id FROM projects ORDER BY 1"),
});

const good = () => ({
  allocations: { [rp.uuid]: { resources: { VCPU: 1 } } },
  project_id: PROJECT,
  user_id: USER,
  consumer_generation: null,
  consumer_type: "INSTANCE",
});

const badPutBodies: Array<[string, unknown]> = [
  ["not an object", "[]"],
  ["null", "null"],
  ["malformed JSON", "{"],
  ["allocations as a string", { ...good(), allocations: "x" }],
  ["fractional amount", { ...good(), allocations: { [rp.uuid]: { resources: { VCPU: 1.5 } } } }],
  ["negative amount", { ...good(), allocations: { [rp.uuid]: { resources: { VCPU: -1 } } } }],
  ["amount as string", { ...good(), allocations: { [rp.uuid]: { resources: { VCPU: "1" } } } }],
  ["huge amount", { ...good(), allocations: { [rp.uuid]: { resources: { VCPU: 1e300 } } } }],
  ["amount beyond any inventory", { ...good(), allocations: { [rp.uuid]: { resources: { VCPU: 2 ** 40 } } } }],
  ["lower-case class", { ...good(), allocations: { [rp.uuid]: { resources: { vcpu: 1 } } } }],
  ["provider key not a uuid", { ...good(), allocations: { "not-a-uuid": { resources: { VCPU: 1 } } } }],
  ["project id as number", { ...good(), project_id: 7 }],
  ["project id too long", { ...good(), project_id: "p".repeat(256) }],
  ["generation as string", { ...good(), consumer_generation: "0" }],
  ["consumer type too long", { ...good(), consumer_type: "A".repeat(256) }],
  ["extra field", { ...good(), surprise: true }],
  ["unknown class", { ...good(), allocations: { [rp.uuid]: { resources: { CUSTOM_NO_SUCH: 1 } } } }],
  ["unknown provider", { ...good(), allocations: { [newUuid()]: { resources: { VCPU: 1 } } } }],
  ["stale generation for a new consumer", { ...good(), consumer_generation: 3 }],
];

describe("bad input", () => {
  it.each(badPutBodies)("PUT /allocations/{uuid} rejects %s", async (_name, body) => {
    const before = await tables();
    const res = await t.request("PUT", `/allocations/${newUuid()}`, { body });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(res.body.errors[0]).toMatchObject({ status: res.status });
    expect(res.body.errors[0].detail).not.toMatch(/SELECT|INSERT|UPDATE|DELETE|violates|stack/i);
    expect(await tables()).toEqual(before);
  });

  it.each(badPutBodies)("POST /allocations rejects %s inside a consumer", async (_name, body) => {
    const before = await tables();
    const res = await t.request("POST", "/allocations", { body: { [newUuid()]: good(), [newUuid()]: body } });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(await tables()).toEqual(before);
  });

  it("rejects a body without JSON content type with 415", async () => {
    const res = await t.request("PUT", `/allocations/${newUuid()}`, { body: JSON.stringify(good()), headers: { "content-type": "text/plain" } });
    expect(res.status).toBe(415);
  });
});
