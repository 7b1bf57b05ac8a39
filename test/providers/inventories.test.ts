import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { allocate, expectError, generationOf, makeProvider, putInventories } from "./support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

const inv = (uuid: string, suffix = "") => `/resource_providers/${uuid}/inventories${suffix}`;

describe("inventories of a provider", () => {
  it("replaces the whole set, filling Placement's defaults, and bumps the generation once", async () => {
    const uuid = await makeProvider(t);
    const res = await t.request("PUT", inv(uuid), {
      version: "1.15",
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 8, allocation_ratio: 16 }, DISK_GB: { total: 100, reserved: 10 } } },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("last-modified")).toMatch(/GMT$/);
    expect(res.body.resource_provider_generation).toBe(1);
    expect(res.body.inventories.VCPU).toEqual({ total: 8, reserved: 0, min_unit: 1, max_unit: 2147483647, step_size: 1, allocation_ratio: 16 });
    const get = await t.request("GET", inv(uuid));
    expect(get.body).toEqual(res.body);
    expect(await generationOf(t, uuid)).toBe(1);

    // A second PUT drops DISK_GB, keeps VCPU with new values.
    const again = await t.request("PUT", inv(uuid), { body: { resource_provider_generation: 1, inventories: { VCPU: { total: 4 } } } });
    expect(Object.keys(again.body.inventories)).toEqual(["VCPU"]);
    expect(await t.sql("SELECT total FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id WHERE rp.uuid = $1", [uuid])).toEqual([
      { total: 4 },
    ]);
  });

  it("adds one class with POST (201 and an absolute Location) and refuses it twice", async () => {
    const uuid = await makeProvider(t);
    const res = await t.request("POST", inv(uuid), { body: { resource_class: "DISK_GB", total: 2048, reserved: 512 } });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`http://localhost${inv(uuid, "/DISK_GB")}`);
    expect(res.body).toMatchObject({ total: 2048, reserved: 512, resource_provider_generation: 1 });
    const twice = await t.request("POST", inv(uuid), { body: { resource_class: "DISK_GB", total: 1 } });
    expectError(twice, 409, "Update conflict", "placement.concurrent_update");
    expectError(
      await t.request("POST", inv(uuid), { body: { resource_class: "CUSTOM_NOPE", total: 1 } }),
      400,
      `Unable to create inventory for resource provider ${uuid}: No such resource class CUSTOM_NOPE.`,
    );
  });

  it("updates one class with its generation and refuses a class the provider lacks", async () => {
    const uuid = await makeProvider(t);
    await putInventories(t, uuid, { DISK_GB: { total: 100 } });
    const ok = await t.request("PUT", inv(uuid, "/DISK_GB"), { body: { resource_provider_generation: 1, total: 200 } });
    expect(ok.body).toMatchObject({ total: 200, resource_provider_generation: 2 });
    const stale = await t.request("PUT", inv(uuid, "/DISK_GB"), { body: { resource_provider_generation: 1, total: 300 } });
    expectError(stale, 409, "resource provider generation conflict", "placement.concurrent_update");
    const missing = await t.request("PUT", inv(uuid, "/MEMORY_MB"), { body: { resource_provider_generation: 2, total: 300 } });
    expectError(missing, 400, "No inventory record with resource class for resource provider");
    const unknown = await t.request("PUT", inv(uuid, "/CUSTOM_NOPE"), { body: { resource_provider_generation: 2, total: 300 } });
    expectError(unknown, 404, "No such resource class CUSTOM_NOPE.");
  });

  it("applies the reserved rule per microversion: reserved may equal total only from 1.26", async () => {
    const uuid = await makeProvider(t);
    const full = { resource_provider_generation: 0, inventories: { VCPU: { total: 4, reserved: 4 } } };
    expectError(await t.request("PUT", inv(uuid), { version: "1.25", body: full }), 400, "The reserved value is greater than or equal to total.");
    expect((await t.request("PUT", inv(uuid), { version: "1.26", body: full })).status).toBe(200);
    const over = { resource_provider_generation: 1, inventories: { VCPU: { total: 4, reserved: 5 } } };
    expectError(await t.request("PUT", inv(uuid), { version: "1.26", body: over }), 400, "The reserved value is greater than total.");
  });

  it("reads one class, with Placement's 404s for a missing class or provider", async () => {
    const uuid = await makeProvider(t);
    await putInventories(t, uuid, { VCPU: { total: 2 } });
    expect((await t.request("GET", inv(uuid, "/VCPU"))).body).toMatchObject({ total: 2, resource_provider_generation: 1 });
    expectError(await t.request("GET", inv(uuid, "/DISK_GB")), 404, `No inventory of class DISK_GB for ${uuid}`);
    const ghost = randomUUID();
    expectError(await t.request("GET", inv(ghost)), 404, `No resource provider with uuid ${ghost} found`);
  });

  it("deletes one class, then answers 404 for it", async () => {
    const uuid = await makeProvider(t);
    await putInventories(t, uuid, { VCPU: { total: 2 }, DISK_GB: { total: 5 } });
    expect((await t.request("DELETE", inv(uuid, "/VCPU"))).status).toBe(204);
    expect(await generationOf(t, uuid)).toBe(2);
    expectError(await t.request("DELETE", inv(uuid, "/VCPU")), 404, "No inventory of class VCPU found for delete");
  });

  it("deletes everything from 1.5 (405 before), bumping the generation even when already empty", async () => {
    const uuid = await makeProvider(t);
    await putInventories(t, uuid, { VCPU: { total: 2 } });
    const old = await t.request("DELETE", inv(uuid), { version: "1.4" });
    expect(old.status).toBe(405);
    expect((await t.request("DELETE", inv(uuid), { version: "1.5" })).status).toBe(204);
    expect((await t.request("DELETE", inv(uuid), { version: "1.5" })).status).toBe(204);
    expect(await generationOf(t, uuid)).toBe(3);
    expect((await t.request("GET", inv(uuid))).body.inventories).toEqual({});
  });
});

describe("inventories with allocations", () => {
  it("refuses to remove a class that has allocations, in each of the three ways", async () => {
    const uuid = await makeProvider(t);
    await putInventories(t, uuid, { VCPU: { total: 8 }, DISK_GB: { total: 100 } });
    await allocate(t, uuid, "VCPU", 2);
    const before = await generationOf(t, uuid);

    const put = await t.request("PUT", inv(uuid), { body: { resource_provider_generation: before, inventories: { DISK_GB: { total: 100 } } } });
    expectError(put, 409, `update conflict: Inventory for 'VCPU' on resource provider '${uuid}' in use.`, "placement.inventory.inuse");
    const all = await t.request("DELETE", inv(uuid));
    expectError(all, 409, `Inventory for 'VCPU' on resource provider '${uuid}' in use.`, "placement.inventory.inuse");
    const one = await t.request("DELETE", inv(uuid, "/VCPU"));
    expectError(one, 409, `Unable to delete inventory of class VCPU`, "placement.concurrent_update");

    expect(await generationOf(t, uuid)).toBe(before);
    expect(await t.sql("SELECT count(*)::int AS n FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id WHERE rp.uuid = $1", [uuid])).toEqual([
      { n: 2 },
    ]);
  });

  it("lets a class shrink below what is allocated, as Placement does (an overcommitted host stays usable)", async () => {
    const uuid = await makeProvider(t);
    await putInventories(t, uuid, { VCPU: { total: 8 } });
    await allocate(t, uuid, "VCPU", 6);
    const gen = await generationOf(t, uuid);
    const res = await t.request("PUT", inv(uuid, "/VCPU"), { body: { resource_provider_generation: gen, total: 4 } });
    expect(res.status).toBe(200);
  });
});
