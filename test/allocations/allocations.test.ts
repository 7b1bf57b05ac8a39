import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { claimBody, createProvider, emptyConsumers, PROJECT, providerGeneration, usedOn, USER } from "./fixtures.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

const detail = (res: { body: any }) => res.body.errors[0].detail as string;

describe("PUT/GET /allocations/{consumer_uuid}", () => {
  it("answers an empty dict for a consumer that holds nothing", async () => {
    const res = await t.request("GET", `/allocations/${newUuid()}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ allocations: {} });
  });

  it("writes the list form before 1.12 under the placeholder project and user, shown from 1.12", async () => {
    const rp = await createProvider(t, { DISK_GB: { total: 100 } });
    const consumer = newUuid();
    const put = await t.request("PUT", `/allocations/${consumer}`, {
      version: "1.7",
      body: { allocations: [{ resource_provider: { uuid: rp.uuid }, resources: { DISK_GB: 10 } }] },
    });
    expect(put.status).toBe(204);
    const old = await t.request("GET", `/allocations/${consumer}`, { version: "1.11" });
    expect(old.body).toEqual({ allocations: { [rp.uuid]: { generation: 1, resources: { DISK_GB: 10 } } } });
    const res = await t.request("GET", `/allocations/${consumer}`, { version: "1.38" });
    expect(res.body).toEqual({
      allocations: { [rp.uuid]: { generation: 1, resources: { DISK_GB: 10 } } },
      project_id: t.config.PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID,
      user_id: t.config.PLACEMENT_INCOMPLETE_CONSUMER_USER_ID,
      consumer_generation: 1,
      consumer_type: "unknown",
    });
    expect(res.headers.get("last-modified")).toMatch(/GMT$/);
  });

  it("replaces a consumer's allocations and bumps both generations", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } });
    const consumer = newUuid();
    expect((await t.request("PUT", `/allocations/${consumer}`, { body: claimBody(rp.uuid, { VCPU: 2 }, null, { consumer_type: "INSTANCE" }) })).status).toBe(204);
    const again = await t.request("PUT", `/allocations/${consumer}`, {
      body: claimBody(rp.uuid, { VCPU: 4, MEMORY_MB: 512 }, 1, { consumer_type: "INSTANCE" }),
    });
    expect(again.status).toBe(204);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(4);
    expect(await providerGeneration(t, rp.id)).toBe(2);
    const res = await t.request("GET", `/allocations/${consumer}`);
    expect(res.body).toMatchObject({ consumer_generation: 2, consumer_type: "INSTANCE", project_id: PROJECT, user_id: USER });
  });

  it("words consumer generation conflicts as Placement does", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    const consumer = newUuid();
    const fresh = await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 1 }, 5) });
    expect(fresh.status).toBe(409);
    expect(fresh.body.errors[0].code).toBe("placement.concurrent_update");
    expect(detail(fresh)).toContain("consumer generation conflict - expected null but got 5");
    expect((await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 1 }) })).status).toBe(204);
    const stale = await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 1 }, null) });
    expect(stale.status).toBe(409);
    expect(detail(stale)).toContain("consumer generation conflict - expected 1 but got None");
  });

  it("removes the consumer when its allocations are set to empty", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    const consumer = newUuid();
    await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 3 }) });
    const before = await providerGeneration(t, rp.id);
    const res = await t.request("PUT", `/allocations/${consumer}`, {
      version: "1.28",
      body: { allocations: {}, project_id: PROJECT, user_id: USER, consumer_generation: 1 },
    });
    expect(res.status).toBe(204);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(0);
    // Placement counts the provider as written when a consumer's allocations on it are cleared.
    expect(await providerGeneration(t, rp.id)).toBe(before + 1);
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [consumer])).toHaveLength(0);
    // Gone means new again: null is the right generation now (bug 1778591).
    expect((await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 1 }) })).status).toBe(204);
  });

  it("enforces capacity, unit constraints and inventory presence with Placement's messages", async () => {
    const rp = await createProvider(t, { DISK_GB: { total: 100, reserved: 20, min_unit: 10, max_unit: 50, step_size: 10, allocation_ratio: 1 } });
    const put = (resources: Record<string, number>) =>
      t.request("PUT", `/allocations/${newUuid()}`, { version: "1.28", body: claimBody(rp.uuid, resources) });
    expect((await put({ DISK_GB: 50 })).status).toBe(204);
    const mixed = await put({ DISK_GB: 10, VCPU: 1 });
    expect(detail(mixed)).toContain(`Inventory for 'VCPU' on resource provider '${rp.uuid}' invalid.`);
    const over = await put({ DISK_GB: 40 });
    expect(over.status).toBe(409);
    expect(detail(over)).toContain(
      `Unable to allocate inventory: Unable to create allocation for 'DISK_GB' on resource provider '${rp.uuid}'. The requested amount would exceed the capacity.`,
    );
    expect((await put({ DISK_GB: 30 })).status).toBe(204);
    const step = await put({ DISK_GB: 15 });
    expect(step.status).toBe(409);
    expect(detail(step)).toContain("The requested amount would violate inventory constraints.");
    expect(detail(await put({ DISK_GB: 60 }))).toContain("violate inventory constraints");
    const noInventory = await put({ VCPU: 1 });
    expect(noInventory.status).toBe(409);
    expect(detail(noInventory)).toContain(`Inventory for 'VCPU' on resource provider '${rp.uuid}' invalid.`);
    expect(await usedOn(t, rp.id, "DISK_GB")).toBe(80);
    expect(await emptyConsumers(t)).toEqual([]);
  });

  it("applies allocation_ratio to capacity", async () => {
    const rp = await createProvider(t, { VCPU: { total: 4, allocation_ratio: 1.5 } });
    const put = (n: number) => t.request("PUT", `/allocations/${newUuid()}`, { body: claimBody(rp.uuid, { VCPU: n }, null, { consumer_type: "INSTANCE" }) });
    expect((await put(4)).status).toBe(204);
    expect((await put(2)).status).toBe(204);
    expect((await put(1)).status).toBe(409);
  });

  it("rejects unknown providers, unknown classes and malformed bodies with 400", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    const consumer = newUuid();
    const missing = newUuid();
    const noProvider = await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(missing, { VCPU: 1 }) });
    expect(noProvider.status).toBe(400);
    expect(detail(noProvider)).toContain(`Allocation for resource provider '${missing}' that does not exist.`);
    const noClass = await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(rp.uuid, { CUSTOM_NOPE: 1 }) });
    expect(noClass.status).toBe(400);
    expect(detail(noClass)).toContain(`Unable to allocate inventory for consumer ${consumer}: No such resource class CUSTOM_NOPE.`);
    const zero = await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 0 }) });
    expect(detail(zero)).toContain("JSON does not validate: 0 is less than the minimum of 1");
    const noType = await t.request("PUT", `/allocations/${consumer}`, { version: "1.38", body: claimBody(rp.uuid, { VCPU: 1 }) });
    expect(detail(noType)).toContain("'consumer_type' is a required property");
    const badType = await t.request("PUT", `/allocations/${consumer}`, { body: claimBody(rp.uuid, { VCPU: 1 }, null, { consumer_type: "vm" }) });
    expect(detail(badType)).toContain("'vm' does not match '^[A-Z0-9_]+$'");
    const badUuid = await t.request("PUT", "/allocations/not-a-uuid", { version: "1.28", body: claimBody(rp.uuid, { VCPU: 1 }) });
    expect(detail(badUuid)).toContain("Malformed consumer_uuid: not-a-uuid");
    const mappings = await t.request("PUT", `/allocations/${consumer}`, { version: "1.33", body: claimBody(rp.uuid, { VCPU: 1 }, null, { mappings: { "": [rp.uuid] } }) });
    expect(detail(mappings)).toContain("Additional properties are not allowed ('mappings' was unexpected)");
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [consumer])).toHaveLength(0);
  });

  it("accepts a dashless consumer uuid and stores it dashed", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    const consumer = newUuid();
    const res = await t.request("PUT", `/allocations/${consumer.replace(/-/g, "")}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 1 }) });
    expect(res.status).toBe(204);
    expect((await t.request("GET", `/allocations/${consumer}`)).body.allocations[rp.uuid].resources).toEqual({ VCPU: 1 });
  });
});

describe("DELETE /allocations/{consumer_uuid}", () => {
  it("removes the allocations and the consumer, and 404s when there is nothing", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    const consumer = newUuid();
    await t.request("PUT", `/allocations/${consumer}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 2 }) });
    const generation = await providerGeneration(t, rp.id);
    expect((await t.request("DELETE", `/allocations/${consumer}`)).status).toBe(204);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(0);
    expect(await providerGeneration(t, rp.id)).toBe(generation);
    const again = await t.request("DELETE", `/allocations/${consumer}`);
    expect(again.status).toBe(404);
    expect(detail(again)).toContain(`No allocations for consumer '${consumer}'`);
  });
});

describe("POST /allocations", () => {
  it("writes several consumers at once, or none of them", async () => {
    const a = await createProvider(t, { VCPU: { total: 4, max_unit: 8 } });
    const b = await createProvider(t, { VCPU: { total: 4, max_unit: 8 } });
    const instance = newUuid();
    const migration = newUuid();
    const body = (gi: number | null, gm: number | null, onA: number, onB: number) => ({
      [instance]: { allocations: { [b.uuid]: { resources: { VCPU: onB } } }, project_id: PROJECT, user_id: USER, consumer_generation: gi },
      [migration]: { allocations: onA ? { [a.uuid]: { resources: { VCPU: onA } } } : {}, project_id: PROJECT, user_id: USER, consumer_generation: gm },
    });
    expect((await t.request("POST", "/allocations", { version: "1.28", body: body(null, null, 2, 2) })).status).toBe(204);
    const tooMuch = await t.request("POST", "/allocations", { version: "1.28", body: body(1, 1, 2, 5) });
    expect(tooMuch.status).toBe(409);
    expect(detail(tooMuch)).toContain("The requested amount would exceed the capacity");
    expect(await usedOn(t, a.id, "VCPU")).toBe(2);
    expect(await usedOn(t, b.id, "VCPU")).toBe(2);
    const stale = await t.request("POST", "/allocations", { version: "1.28", body: body(1, 7, 2, 2) });
    expect(detail(stale)).toContain("consumer generation conflict - expected 1 but got 7");
    expect((await t.request("POST", "/allocations", { version: "1.28", body: body(1, 1, 0, 3) })).status).toBe(204);
    expect(await usedOn(t, a.id, "VCPU")).toBe(0);
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [migration])).toHaveLength(0);
  });

  it("checks the request's own total per provider, across consumers", async () => {
    const rp = await createProvider(t, { VCPU: { total: 2 } });
    const one = (g: null) => ({ allocations: { [rp.uuid]: { resources: { VCPU: 1 } } }, project_id: PROJECT, user_id: USER, consumer_generation: g });
    const res = await t.request("POST", "/allocations", { version: "1.28", body: { [newUuid()]: one(null), [newUuid()]: one(null), [newUuid()]: one(null) } });
    expect(res.status).toBe(409);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(0);
  });

  it("does not exist before 1.13 and is the only method on /allocations", async () => {
    expect((await t.request("POST", "/allocations", { version: "1.12", body: {} })).status).toBe(404);
    const get = await t.request("GET", "/allocations");
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
  });
});

describe("provider allocations and usages", () => {
  it("lists a provider's allocations by consumer and its usage per inventory class", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 }, DISK_GB: { total: 100 } });
    const c1 = newUuid();
    const c2 = newUuid();
    await t.request("PUT", `/allocations/${c1}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 2, DISK_GB: 10 }) });
    await t.request("PUT", `/allocations/${c2}`, { version: "1.28", body: claimBody(rp.uuid, { VCPU: 1 }) });
    const allocs = await t.request("GET", `/resource_providers/${rp.uuid}/allocations`, { version: "1.28" });
    expect(allocs.body).toEqual({
      resource_provider_generation: 2,
      allocations: {
        [c1]: { resources: { VCPU: 2, DISK_GB: 10 }, consumer_generation: 1 },
        [c2]: { resources: { VCPU: 1 }, consumer_generation: 1 },
      },
    });
    const usages = await t.request("GET", `/resource_providers/${rp.uuid}/usages`, { version: "1.14" });
    expect(usages.body).toEqual({ resource_provider_generation: 2, usages: { VCPU: 3, DISK_GB: 10 } });
    expect(usages.headers.get("last-modified")).toBeNull();
    const missing = newUuid();
    const notFound = await t.request("GET", `/resource_providers/${missing}/usages`);
    expect(notFound.status).toBe(404);
    expect(detail(notFound)).toContain(`No resource provider with uuid ${missing} found`);
    expect((await t.request("GET", `/resource_providers/${missing}/allocations`)).status).toBe(404);
  });

  it("sums usages per project and user, grouped by consumer type from 1.38", async () => {
    const rp = await createProvider(t, { VCPU: { total: 64 }, DISK_GB: { total: 1000 } });
    const project = newUuid();
    const put = (user: string, type: string | undefined, resources: Record<string, number>) =>
      t.request("PUT", `/allocations/${newUuid()}`, {
        version: type ? "1.38" : "1.37",
        body: { ...claimBody(rp.uuid, resources), project_id: project, user_id: user, ...(type ? { consumer_type: type } : {}) },
      });
    await put("u1", "INSTANCE", { VCPU: 2, DISK_GB: 20 });
    await put("u1", "INSTANCE", { VCPU: 1 });
    await put("u2", "MIGRATION", { VCPU: 4 });
    await put("u2", undefined, { DISK_GB: 5 });
    const old = await t.request("GET", `/usages?project_id=${project}`, { version: "1.9" });
    expect(old.body).toEqual({ usages: { VCPU: 7, DISK_GB: 25 } });
    const byUser = await t.request("GET", `/usages?project_id=${project}&user_id=u2`, { version: "1.37" });
    expect(byUser.body).toEqual({ usages: { VCPU: 4, DISK_GB: 5 } });
    const typed = await t.request("GET", `/usages?project_id=${project}`);
    expect(typed.body).toEqual({
      usages: {
        INSTANCE: { consumer_count: 2, VCPU: 3, DISK_GB: 20 },
        MIGRATION: { consumer_count: 1, VCPU: 4 },
        unknown: { consumer_count: 1, DISK_GB: 5 },
      },
    });
    expect((await t.request("GET", `/usages?project_id=${project}&consumer_type=all`)).body).toEqual({
      usages: { all: { consumer_count: 4, VCPU: 7, DISK_GB: 25 } },
    });
    expect((await t.request("GET", `/usages?project_id=${project}&consumer_type=unknown`)).body).toEqual({
      usages: { unknown: { consumer_count: 1, DISK_GB: 5 } },
    });
    expect((await t.request("GET", `/usages?project_id=${project}&consumer_type=ALL`)).body).toEqual({ usages: {} });
    const bad = await t.request("GET", `/usages?project_id=${project}&dummy=1`, { version: "1.9" });
    expect(bad.status).toBe(400);
    expect(detail(bad)).toContain("Additional properties are not allowed");
    expect((await t.request("GET", "/usages", { version: "1.9" })).status).toBe(400);
    expect((await t.request("GET", `/usages?project_id=${project}`, { version: "1.8" })).status).toBe(404);
  });
});
