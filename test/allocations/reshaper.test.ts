import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { claimBody, createProvider, emptyConsumers, overcommitted, PROJECT, providerGeneration, usedOn, USER } from "./fixtures.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

const detail = (res: { body: any }) => res.body.errors[0].detail as string;

/** A root with VCPU and DISK_GB, an empty child, and one instance using both classes on the root. */
async function tree() {
  const root = await createProvider(t, { VCPU: { total: 8 }, DISK_GB: { total: 100 } });
  const child = await createProvider(t);
  await t.sql("UPDATE resource_providers SET parent_provider_id = $1, root_provider_id = $1 WHERE id = $2", [root.id, child.id]);
  const instance = newUuid();
  expect((await t.request("PUT", `/allocations/${instance}`, { version: "1.30", body: claimBody(root.uuid, { VCPU: 2, DISK_GB: 10 }) })).status).toBe(204);
  return { root, child, instance, rootGeneration: await providerGeneration(t, root.id) };
}

const entry = (allocations: Record<string, Record<string, number>>, generation: number | null) => ({
  allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
  project_id: PROJECT,
  user_id: USER,
  consumer_generation: generation,
});

describe("POST /reshaper", () => {
  it("moves VCPU inventory and its allocation from the root to a child atomically", async () => {
    const { root, child, instance, rootGeneration } = await tree();
    const res = await t.request("POST", "/reshaper", {
      version: "1.30",
      body: {
        inventories: {
          [root.uuid]: { resource_provider_generation: rootGeneration, inventories: { DISK_GB: { total: 100 } } },
          [child.uuid]: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } },
        },
        allocations: { [instance]: entry({ [root.uuid]: { DISK_GB: 10 }, [child.uuid]: { VCPU: 2 } }, 1) },
      },
    });
    expect(res.status).toBe(204);
    expect(await usedOn(t, child.id, "VCPU")).toBe(2);
    expect(await usedOn(t, root.id, "VCPU")).toBe(0);
    expect(await t.sql("SELECT 1 FROM inventories WHERE resource_provider_id = $1", [root.id])).toHaveLength(1);
    // Interim inventory, allocations, final inventory: three bumps each, as in Placement.
    expect(await providerGeneration(t, root.id)).toBe(rootGeneration + 3);
    expect(await providerGeneration(t, child.id)).toBe(3);
    const [consumer] = await t.sql<{ generation: number }>("SELECT generation FROM consumers WHERE uuid = $1", [instance]);
    expect(consumer.generation).toBe(2);
  });

  it("leaves everything as it was when any part fails", async () => {
    const { root, child, instance, rootGeneration } = await tree();
    const snapshot = async () => ({
      inventories: await t.sql("SELECT resource_provider_id, resource_class_id, total FROM inventories WHERE resource_provider_id IN ($1, $2) ORDER BY 1, 2", [root.id, child.id]),
      allocations: await t.sql("SELECT resource_provider_id, resource_class_id, used FROM allocations ORDER BY 1, 2"),
      generations: [await providerGeneration(t, root.id), await providerGeneration(t, child.id)],
    });
    const before = await snapshot();
    const attempt = (childInventory: Record<string, unknown>, rootGeneration_: number, consumerGeneration: number | null) =>
      t.request("POST", "/reshaper", {
        version: "1.30",
        body: {
          inventories: {
            [root.uuid]: { resource_provider_generation: rootGeneration_, inventories: { DISK_GB: { total: 100 } } },
            [child.uuid]: { resource_provider_generation: 0, inventories: childInventory },
          },
          allocations: { [instance]: entry({ [root.uuid]: { DISK_GB: 10 }, [child.uuid]: { VCPU: 2 } }, consumerGeneration) },
        },
      });
    const tooSmall = await attempt({ VCPU: { total: 1 } }, rootGeneration, 1);
    expect(tooSmall.status).toBe(409);
    expect(detail(tooSmall)).toContain("Unable to allocate inventory");
    const staleProvider = await attempt({ VCPU: { total: 8 } }, rootGeneration - 1, 1);
    expect(staleProvider.status).toBe(409);
    expect(staleProvider.body.errors[0].code).toBe("placement.concurrent_update");
    expect(detail(staleProvider)).toContain(`resource provider generation conflict for provider ${root.uuid}: actual: ${rootGeneration}, given: ${rootGeneration - 1}`);
    const staleConsumer = await attempt({ VCPU: { total: 8 } }, rootGeneration, 7);
    expect(detail(staleConsumer)).toContain("consumer generation conflict - expected 1 but got 7");
    const unknownClass = await attempt({ CUSTOM_NOT_THERE: { total: 8 } }, rootGeneration, 1);
    expect(unknownClass.status).toBe(400);
    expect(detail(unknownClass)).toContain("No such resource class CUSTOM_NOT_THERE");
    // The VCPU inventory on the root is still in use by the instance when nothing moves it.
    const inUse = await t.request("POST", "/reshaper", {
      version: "1.30",
      body: { inventories: { [root.uuid]: { resource_provider_generation: rootGeneration, inventories: { DISK_GB: { total: 100 } } } }, allocations: {} },
    });
    expect(inUse.status).toBe(409);
    expect(inUse.body.errors[0].code).toBe("placement.inventory.inuse");
    const missing = newUuid();
    const noProvider = await t.request("POST", "/reshaper", {
      version: "1.30",
      body: { inventories: { [missing]: { resource_provider_generation: 0, inventories: {} } }, allocations: {} },
    });
    expect(noProvider.status).toBe(400);
    expect(noProvider.body.errors[0].code).toBe("placement.resource_provider.not_found");
    expect(await snapshot()).toEqual(before);
    expect(await overcommitted(t)).toEqual([]);
    expect(await emptyConsumers(t)).toEqual([]);
  });

  it("is version gated, admin only and validates its body per microversion", async () => {
    expect((await t.request("POST", "/reshaper", { version: "1.29", body: {} })).status).toBe(404);
    expect((await t.request("POST", "/reshaper", { version: "1.30", body: {}, token: "someone" })).status).toBe(403);
    const get = await t.request("GET", "/reshaper", { version: "1.30" });
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    const rp = newUuid();
    const base = { inventories: { [rp]: { resource_provider_generation: 0, inventories: {} } } };
    expect(detail(await t.request("POST", "/reshaper", { version: "1.30", body: base }))).toContain("'allocations' is a required property");
    const withType = { ...base, allocations: { [newUuid()]: { ...entry({}, null), consumer_type: "INSTANCE" } } };
    expect(detail(await t.request("POST", "/reshaper", { version: "1.37", body: withType }))).toContain("'consumer_type' was unexpected");
    const withoutType = { ...base, allocations: { [newUuid()]: entry({}, null) } };
    expect(detail(await t.request("POST", "/reshaper", { version: "1.38", body: withoutType }))).toContain("'consumer_type' is a required property");
  });
});
