/**
 * Placement 14.0.0's rule (bug 2104040): a provider already over capacity,
 * because reserved or allocation_ratio changed under its allocations, still
 * takes a write that does not raise its usage of the class.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { makeProvider, putInventories } from "../providers/support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

async function consumerGeneration(consumer: string): Promise<number | null> {
  return (await t.request("GET", `/allocations/${consumer}`)).body.consumer_generation ?? null;
}

async function allocate(consumer: string, allocations: Record<string, Record<string, number>>) {
  return t.request("PUT", `/allocations/${consumer}`, {
    version: "1.28",
    body: {
      allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
      project_id: "over-capacity",
      user_id: "over-capacity",
      consumer_generation: await consumerGeneration(consumer),
    },
  });
}

async function usage(rp: string): Promise<Record<string, number>> {
  return (await t.request("GET", `/resource_providers/${rp}/usages`)).body.usages;
}

/** A provider with 6 of its 8 VCPU allocated to `consumer`, then reserved raised to 4: capacity 4 < usage 6. */
async function overCapacity(consumer: string): Promise<string> {
  const rp = await makeProvider(t);
  await putInventories(t, rp, { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } });
  expect((await allocate(consumer, { [rp]: { VCPU: 6, MEMORY_MB: 256 } })).status).toBe(204);
  const raised = await putInventories(t, rp, { VCPU: { total: 8, reserved: 4 }, MEMORY_MB: { total: 1024 } });
  expect(raised.body.inventories.VCPU.reserved).toBe(4);
  return rp;
}

describe("writes on a provider already over capacity", () => {
  it("rewriting the same allocation is allowed", async () => {
    const consumer = newUuid();
    const rp = await overCapacity(consumer);
    const res = await allocate(consumer, { [rp]: { VCPU: 6, MEMORY_MB: 256 } });
    expect(res.status, res.text).toBe(204);
    expect(await usage(rp)).toEqual({ VCPU: 6, MEMORY_MB: 256 });
  });

  it("shrinking it is allowed, even while still over capacity", async () => {
    const consumer = newUuid();
    const rp = await overCapacity(consumer);
    const res = await allocate(consumer, { [rp]: { VCPU: 5, MEMORY_MB: 512 } });
    expect(res.status, res.text).toBe(204);
    expect(await usage(rp)).toEqual({ VCPU: 5, MEMORY_MB: 512 });
  });

  it("growing it is a 409, and nothing is written", async () => {
    const consumer = newUuid();
    const rp = await overCapacity(consumer);
    const res = await allocate(consumer, { [rp]: { VCPU: 7, MEMORY_MB: 256 } });
    expect(res.status).toBe(409);
    expect(res.body.errors[0].detail).toContain(`Unable to create allocation for 'VCPU' on resource provider '${rp}'. The requested amount would exceed the capacity.`);
    expect(await usage(rp)).toEqual({ VCPU: 6, MEMORY_MB: 256 });
  });

  it("another consumer's new allocation there is a 409: it raises the usage", async () => {
    const consumer = newUuid();
    const rp = await overCapacity(consumer);
    const res = await allocate(newUuid(), { [rp]: { VCPU: 1 } });
    expect(res.status).toBe(409);
    expect(await usage(rp)).toEqual({ VCPU: 6, MEMORY_MB: 256 });
  });

  it("moving the same amount between two consumers in one POST /allocations is allowed", async () => {
    const instance = newUuid();
    const rp = await overCapacity(instance);
    const migration = newUuid();
    const owner = { project_id: "over-capacity", user_id: "over-capacity" };
    const res = await t.request("POST", "/allocations", {
      version: "1.28",
      body: {
        [instance]: { allocations: {}, ...owner, consumer_generation: await consumerGeneration(instance) },
        [migration]: { allocations: { [rp]: { resources: { VCPU: 6, MEMORY_MB: 256 } } }, ...owner, consumer_generation: null },
      },
    });
    expect(res.status, res.text).toBe(204);
    expect(await usage(rp)).toEqual({ VCPU: 6, MEMORY_MB: 256 });
  });
});
