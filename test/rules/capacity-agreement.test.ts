/**
 * The capacity rule (src/services/rules/capacity.ts) is written once and read
 * by every place that judges capacity: the inventory write's check, the
 * allocation write, GET /resource_providers?resources= and `placement
 * audit`. Over a grid of inventories with negative and fractional ratios
 * (Placement accepts any finite ratio, and truncates the product toward
 * zero), every one the API accepts must get the same capacity from each of
 * them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { overCapacity } from "../../src/services/audit.js";
import { capacityOf } from "../../src/services/rules/capacity.js";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { makeProvider } from "../providers/support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

const TOTALS = [1, 2, 7];
const RATIOS = [-1.5, -0.5, -0.25, -0.1, 0, 0.1, 0.33, 0.5, 0.7, 1, 1.3, 2.5];

interface Inventory {
  total: number;
  reserved: number;
  allocation_ratio: number;
}

const grid: Inventory[] = TOTALS.flatMap((total) =>
  [...new Set([0, 1, total])].flatMap((reserved) => RATIOS.map((allocation_ratio) => ({ total, reserved, allocation_ratio }))),
);

const capacity = (inv: Inventory) => capacityOf({ total: inv.total, reserved: inv.reserved, allocationRatio: inv.allocation_ratio });

async function setVcpu(rp: string, inv: Inventory) {
  const gen = (await t.request("GET", `/resource_providers/${rp}`)).body.generation;
  return t.request("PUT", `/resource_providers/${rp}/inventories`, { body: { resource_provider_generation: gen, inventories: { VCPU: inv } } });
}

async function allocate(rp: string, vcpu: number) {
  return t.request("PUT", `/allocations/${newUuid()}`, {
    version: "1.28",
    body: { allocations: { [rp]: { resources: { VCPU: vcpu } } }, project_id: "p", user_id: "u", consumer_generation: null },
  });
}

async function listed(rp: string, vcpu: number): Promise<boolean> {
  const res = await t.request("GET", `/resource_providers?resources=VCPU:${vcpu}`);
  expect(res.status, res.text).toBe(200);
  return res.body.resource_providers.some((p: { uuid: string }) => p.uuid === rp);
}

describe("one capacity for every inventory the API accepts", () => {
  it("the inventory check, the allocation write, the provider list and the audit agree", async () => {
    const expectedOver = new Map<string, number>();
    const withinCapacity: string[] = [];
    let accepted = 0;
    for (const inv of grid) {
      const what = JSON.stringify(inv);
      const c = capacity(inv);

      // The inventory write accepts it exactly when its capacity is not negative (from 1.26).
      const fresh = await makeProvider(t);
      const put = await setVcpu(fresh, inv);
      expect(put.status, `${what}: ${put.text}`).toBe(c >= 0 && inv.reserved <= inv.total ? 200 : 400);
      if (put.status !== 200) continue;
      accepted++;

      // The allocation write and the provider list: c fits, c + 1 does not.
      expect(await listed(fresh, c + 1), what).toBe(false);
      expect((await allocate(fresh, c + 1)).status, what).toBe(409);
      if (c >= 1) {
        expect(await listed(fresh, c), what).toBe(true);
        expect((await allocate(fresh, c)).status, what).toBe(204);
      }
      withinCapacity.push(fresh);

      // The audit: a provider using 1 is over capacity exactly when the capacity is below 1.
      const used = await makeProvider(t);
      await setVcpu(used, { total: 1000, reserved: 0, allocation_ratio: 1 });
      expect((await allocate(used, 1)).status, what).toBe(204);
      expect((await setVcpu(used, inv)).status, what).toBe(200);
      if (c < 1) expectedOver.set(used, c);
    }
    // The grid holds accepted inventories with a negative ratio and with fractional products.
    expect(accepted).toBeGreaterThan(grid.length / 2);
    expect(grid.some((inv) => inv.allocation_ratio < 0 && inv.reserved < inv.total && capacity(inv) === 0)).toBe(true);

    const over = new Map((await overCapacity(t.database.db)).map((r) => [r.provider_uuid, Number(r.capacity)]));
    for (const rp of withinCapacity) expect(over.has(rp), `provider ${rp} within its capacity called over it`).toBe(false);
    expect(new Map([...over].filter(([rp]) => !withinCapacity.includes(rp)))).toEqual(expectedOver);
  });
});
