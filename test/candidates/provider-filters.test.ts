/** GET /resource_providers with the filters it shares with allocation candidates, against PostgreSQL. */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness } from "../support/harness.js";
import { custom, startData, type Data } from "./data.js";

let t: Harness;
let d: Data;
beforeAll(async () => void ({ t, d } = await startData()));
afterAll(async () => t.close());

const names = async (query: string, version = "latest") => {
  const res = await t.request("GET", `/resource_providers?${query}`, { version });
  expect(res.status).toBe(200);
  return res.body.resource_providers.map((p: any) => p.uuid);
};

describe("GET /resource_providers filters", () => {
  it("filters by free capacity net of allocations and by the unit rules", async () => {
    const DISK = custom("DISK");
    const a = await d.provider({ inventory: { [DISK]: { total: 100, reserved: 10, maxUnit: 50, stepSize: 5 } } });
    const b = await d.provider({ inventory: { [DISK]: 100 } });
    await d.allocate(b, DISK, 80);
    expect(await names(`resources=${DISK}:25`)).toEqual([a.uuid]);
    expect(await names(`resources=${DISK}:20`)).toEqual([a.uuid, b.uuid]);
    expect(await names(`resources=${DISK}:21`)).toEqual([]);
    const res = await t.request("GET", `/resource_providers?resources=${custom("NOPE")}:1`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].detail).toContain("Invalid resource class in resources parameter: No such resource class CUSTOM_NOPE");
  });

  it("filters by required, forbidden and any-of traits (repeated from 1.39, last one wins before)", async () => {
    const [A, B, C] = [custom("A"), custom("B"), custom("C")];
    const pa = await d.provider({ traits: [A] });
    const pab = await d.provider({ traits: [A, B] });
    const pc = await d.provider({ traits: [C] });
    expect(await names(`required=${A}`)).toEqual([pa.uuid, pab.uuid]);
    expect(await names(`required=${A},!${B}`)).toEqual([pa.uuid]);
    expect(await names(`required=in:${B},${C}`)).toEqual([pab.uuid, pc.uuid]);
    expect(await names(`required=in:${A},${C}&required=!${B}`)).toEqual([pa.uuid, pc.uuid]);
    expect(await names(`required=${A}&required=${C}`, "1.38")).toEqual([pc.uuid]);
    const res = await t.request("GET", `/resource_providers?required=CUSTOM_NOT_THERE_${randomUUID().slice(0, 4).toUpperCase()}`);
    expect(res.status).toBe(400);
    expect(res.body.errors[0].detail).toContain('Invalid trait(s) in "required" parameter: No such trait(s)');
  });

  it("filters by member_of with in:, repeats and !", async () => {
    const [agg1, agg2] = [randomUUID(), randomUUID()];
    const p1 = await d.provider({ aggregates: [agg1] });
    const p12 = await d.provider({ aggregates: [agg1, agg2] });
    expect(await names(`member_of=${agg1}`)).toEqual([p1.uuid, p12.uuid]);
    expect(await names(`member_of=in:${agg2},${randomUUID()}`)).toEqual([p12.uuid]);
    expect(await names(`member_of=${agg1}&member_of=${agg2}`)).toEqual([p12.uuid]);
    expect(await names(`member_of=${agg1}&member_of=!${agg2}`)).toEqual([p1.uuid]);
    expect(await names(`member_of=${randomUUID()}`)).toEqual([]);
  });
});
