import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { expectError, generationOf, makeProvider } from "./support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

const aggs = (uuid: string) => `/resource_providers/${uuid}/aggregates`;

describe("provider aggregates", () => {
  it("does not exist before 1.1", async () => {
    const uuid = await makeProvider(t);
    expect((await t.request("GET", aggs(uuid), { version: "1.0" })).status).toBe(404);
    expect((await t.request("PUT", aggs(uuid), { version: "1.0", body: [] })).status).toBe(404);
  });

  it("takes a bare list before 1.19 and leaves the generation alone", async () => {
    const uuid = await makeProvider(t);
    const [a, b] = [randomUUID(), randomUUID()];
    const res = await t.request("PUT", aggs(uuid), { version: "1.18", body: [a, b] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ aggregates: [a, b] });
    expect(await generationOf(t, uuid)).toBe(0);
    expect((await t.request("GET", aggs(uuid), { version: "1.1" })).body).toEqual({ aggregates: [a, b] });
  });

  it("checks and bumps the generation from 1.19", async () => {
    const uuid = await makeProvider(t);
    const a = randomUUID();
    const res = await t.request("PUT", aggs(uuid), { body: { aggregates: [a], resource_provider_generation: 0 } });
    expect(res.body).toEqual({ aggregates: [a], resource_provider_generation: 1 });
    const stale = await t.request("PUT", aggs(uuid), { body: { aggregates: [], resource_provider_generation: 0 } });
    expectError(stale, 409, "Resource provider's generation already changed", "placement.concurrent_update");
    const cleared = await t.request("PUT", aggs(uuid), { body: { aggregates: [], resource_provider_generation: 1 } });
    expect(cleared.body).toEqual({ aggregates: [], resource_provider_generation: 2 });
    // The aggregate itself stays: other providers may still use it.
    expect(await t.sql("SELECT uuid FROM aggregates WHERE uuid = $1", [a])).toEqual([{ uuid: a }]);
  });

  it("shares one aggregate row between providers", async () => {
    const [p1, p2] = [await makeProvider(t), await makeProvider(t)];
    const a = randomUUID();
    await Promise.all(
      [p1, p2].map((p) => t.request("PUT", aggs(p), { body: { aggregates: [a], resource_provider_generation: 0 } })),
    );
    expect(await t.sql("SELECT count(*)::int AS n FROM aggregates WHERE uuid = $1", [a])).toEqual([{ n: 1 }]);
    expect(await t.sql("SELECT count(*)::int AS n FROM resource_provider_aggregates rpa JOIN aggregates a ON a.id = rpa.aggregate_id WHERE a.uuid = $1", [a])).toEqual([
      { n: 2 },
    ]);
  });

  it("sends Last-Modified and Cache-Control from 1.15 only", async () => {
    const uuid = await makeProvider(t);
    const old = await t.request("GET", aggs(uuid), { version: "1.14" });
    expect(old.headers.get("last-modified")).toBeNull();
    expect(old.headers.get("cache-control")).toBeNull();
    const put = await t.request("PUT", aggs(uuid), { version: "1.15", body: [randomUUID()] });
    expect(put.headers.get("last-modified")).toMatch(/^\w+, \d+ \w+ \d{4} [\d:]+ GMT$/);
    expect(put.headers.get("cache-control")).toBe("no-cache");
  });

  it("answers 404 for an unknown provider before reading the body", async () => {
    const res = await t.request("PUT", aggs(randomUUID()), { body: [] });
    expect(res.status).toBe(404);
  });
});
