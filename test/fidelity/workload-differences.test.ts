/**
 * Differences the seeded differential workload (npm run compat) found, one
 * test each, asserting what the reference Placement answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { expectError, makeProvider, putInventories } from "../providers/support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

const owner = { project_id: "workload", user_id: "workload" };

/** PUT /allocations/{consumer} of `resources` on `rp` (none: empty allocations). */
function put(consumer: string, version: string, body: Record<string, unknown>, rp?: string, resources?: Record<string, number>) {
  const allocations = rp ? { [rp]: { resources } } : {};
  return t.request("PUT", `/allocations/${consumer}`, { version, body: { allocations, ...owner, ...body } });
}

/** A provider with 4 VCPU. */
async function smallProvider(): Promise<string> {
  const rp = await makeProvider(t);
  await putInventories(t, rp, { VCPU: { total: 4 } });
  return rp;
}

describe("a consumer written with empty allocations while it holds nothing", () => {
  it("exists afterwards: a write with consumer_generation null is the generation conflict, before the capacity check", async () => {
    const rp = await smallProvider();
    const consumer = newUuid();
    expect((await put(consumer, "1.38", { consumer_generation: null, consumer_type: "MIGRATION" })).status).toBe(204);
    for (const vcpu of [9, 1]) {
      const res = await put(consumer, "1.39", { consumer_generation: null, consumer_type: "INSTANCE" }, rp, { VCPU: vcpu });
      expectError(res, 409, "consumer generation conflict - expected 0 but got None", "placement.concurrent_update");
    }
    const [row] = await t.sql("SELECT generation FROM consumers WHERE uuid = $1", [consumer]);
    expect(row).toEqual({ generation: 0 });
    expect((await t.request("GET", `/resource_providers/${rp}/usages`)).body.usages).toEqual({ VCPU: 0 });
  });

  it("keeps the type it was created with through writes below 1.38", async () => {
    const rp = await smallProvider();
    const consumer = newUuid();
    expect((await put(consumer, "1.38", { consumer_generation: null, consumer_type: "INSTANCE" })).status).toBe(204);
    expect((await put(consumer, "1.28", { consumer_generation: 0 }, rp, { VCPU: 1 })).status).toBe(204);
    const shown = await t.request("GET", `/allocations/${consumer}`, { version: "1.39" });
    expect(shown.body).toMatchObject({ consumer_generation: 1, consumer_type: "INSTANCE", allocations: { [rp]: { resources: { VCPU: 1 } } } });
  });

  it("is neither bumped nor deleted by another empty write, and DELETE is the 404 that keeps it", async () => {
    const consumer = newUuid();
    expect((await put(consumer, "1.38", { consumer_generation: null, consumer_type: "INSTANCE" })).status).toBe(204);
    expect((await put(consumer, "1.38", { consumer_generation: 0, consumer_type: "MIGRATION" })).status).toBe(204);
    expectError(await t.request("DELETE", `/allocations/${consumer}`), 404, `No allocations for consumer '${consumer}'`);
    const rows = await t.sql(
      "SELECT c.generation, ct.name AS type FROM consumers c LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id WHERE c.uuid = $1",
      [consumer],
    );
    expect(rows).toEqual([{ generation: 0, type: "MIGRATION" }]);
  });

  it("is still deleted once a write empties the allocations it held", async () => {
    const rp = await smallProvider();
    const consumer = newUuid();
    expect((await put(consumer, "1.38", { consumer_generation: null, consumer_type: "INSTANCE" }, rp, { VCPU: 1 })).status).toBe(204);
    expect((await put(consumer, "1.38", { consumer_generation: 1, consumer_type: "INSTANCE" })).status).toBe(204);
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [consumer])).toEqual([]);
  });
});

describe("GET /resource_providers?name= (empty)", () => {
  it("lists every provider, as an empty name filters nothing", async () => {
    const a = await makeProvider(t);
    const b = await makeProvider(t);
    for (const query of ["name=", `name=rp-${a}&name=`]) {
      const res = await t.request("GET", `/resource_providers?${query}`);
      expect(res.status).toBe(200);
      const listed = res.body.resource_providers.map((p: { uuid: string }) => p.uuid);
      expect(listed, query).toEqual(expect.arrayContaining([a, b]));
      expect(listed.length, query).toBe((await t.sql("SELECT count(*)::int AS n FROM resource_providers"))[0].n);
    }
  });
});

describe("GET / with an Accept header that rules JSON out", () => {
  it("answers the version document, as Placement's root handler checks no Accept", async () => {
    for (const version of ["1.0", "1.23", "1.39"]) {
      const res = await t.request("GET", "/", { version, headers: { accept: "text/plain" } });
      expect(res.status, version).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/json");
      expect(res.body.versions[0]).toMatchObject({ id: "v1.0", max_version: "1.39", min_version: "1.0" });
    }
  });
});

describe("PUT /resource_providers/{uuid} and its Last-Modified (updated_at from before the write)", () => {
  const reparent = (uuid: string, parent: string) =>
    t.request("PUT", `/resource_providers/${uuid}`, { version: "1.39", body: { name: `rp-${uuid}`, parent_provider_uuid: parent } });

  it("a move stamps every provider whose root it changes, so a later PUT there carries Last-Modified", async () => {
    const [root, other] = [await makeProvider(t), await makeProvider(t)];
    const child = await makeProvider(t, { parent: root });
    const grandchild = await makeProvider(t, { parent: child });
    expect((await reparent(root, other)).status).toBe(200);
    const res = await reparent(grandchild, child);
    expect(res.status).toBe(200);
    expect(res.headers.get("last-modified")).not.toBeNull();
  });

  it("a PUT that changes nothing stamps nothing: a child never changed still has no Last-Modified", async () => {
    const root = await makeProvider(t);
    const child = await makeProvider(t, { parent: root });
    for (let i = 0; i < 2; i++) {
      const res = await reparent(child, root);
      expect(res.status).toBe(200);
      expect(res.headers.get("last-modified")).toBeNull();
    }
  });

  it("a move within one tree leaves the providers below the moved one unstamped", async () => {
    const root = await makeProvider(t);
    const [left, right] = [await makeProvider(t, { parent: root }), await makeProvider(t, { parent: root })];
    const below = await makeProvider(t, { parent: left });
    expect((await reparent(left, right)).status).toBe(200);
    expect((await reparent(below, left)).headers.get("last-modified")).toBeNull();
  });
});
