/**
 * POST /claims, one request at a time: what is chosen for each pick, what the
 * answer and the tables hold afterwards, and every refusal (409 with its
 * reason and nothing written; 400 for bad input, through the same query
 * parser as GET /allocation_candidates).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { createProvider, type Provider } from "../allocations/fixtures.js";
import { allocationsOf, brokenInvariants, claimBody, consumer } from "./support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

/** Every test gets a cloud of its own: three nodes, the first half full, the second a quarter, the third empty. */
let nodes: Provider[];
let trait: string;
beforeEach(async () => {
  await t.sql("DELETE FROM allocations");
  await t.sql("DELETE FROM consumers");
  await t.sql("DELETE FROM inventories");
  await t.sql("DELETE FROM resource_provider_traits");
  await t.sql("DELETE FROM resource_providers");
  nodes = [];
  for (let i = 0; i < 3; i++) nodes.push(await createProvider(t, { VCPU: { total: 8 }, MEMORY_MB: { total: 8192 } }));
  for (const [node, vcpu] of [[nodes[0], 4], [nodes[1], 2]] as const) {
    const res = await t.request("PUT", `/allocations/${newUuid()}`, {
      body: { allocations: { [node.uuid]: { resources: { VCPU: vcpu } } }, project_id: "p", user_id: "u", consumer_generation: null, consumer_type: "INSTANCE" },
    });
    expect(res.status).toBe(204);
  }
  trait = `CUSTOM_CLAIMS_${newUuid().slice(0, 8).toUpperCase()}`;
  expect((await t.request("PUT", `/traits/${trait}`)).status).toBe(201);
});

const post = (query: string, body: unknown, version = "1.39") => t.request("POST", `/claims?${query}`, { body, version });
const chosen = (res: { body: any }) => Object.keys(res.body.claims[0].allocations);

describe("POST /claims picks", () => {
  it("pack takes the fullest node that fits, and answers the allocations as GET /allocations shows them", async () => {
    const who = consumer();
    const res = await post("resources=VCPU:2", claimBody({ pick: "pack" }, [who]));
    expect(res.status, res.text).toBe(200);
    expect(chosen(res)).toEqual([nodes[0].uuid]);
    const shown = await t.request("GET", `/allocations/${who.consumer_uuid}`);
    expect(res.body.claims).toEqual([{ consumer_uuid: who.consumer_uuid, allocations: shown.body.allocations, consumer_generation: shown.body.consumer_generation }]);
    expect(shown.body.consumer_type).toBe("INSTANCE");
    expect(await allocationsOf(t, who.consumer_uuid)).toEqual({ [nodes[0].uuid]: { VCPU: 2 } });
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("pack moves on to the next fullest node once the fullest has no room", async () => {
    expect(chosen(await post("resources=VCPU:5", claimBody({ pick: "pack" })))).toEqual([nodes[1].uuid]);
  });

  it("spread takes the emptiest node; first the lowest id; random any node that fits", async () => {
    expect(chosen(await post("resources=VCPU:1", claimBody({ pick: "spread" })))).toEqual([nodes[2].uuid]);
    expect(chosen(await post("resources=VCPU:1", claimBody({ pick: "first" })))).toEqual([nodes[0].uuid]);
    const seen = new Set<string>();
    for (let i = 0; i < 12; i++) seen.add(chosen(await post("resources=VCPU:1", claimBody({ pick: "random" })))[0]);
    expect(seen.size).toBeGreaterThan(1);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("weighs candidates in preference order whatever randomize_allocation_candidates says", async () => {
    const shuffled = await startHarness({ config: { PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: true } });
    try {
      const own: Provider[] = [];
      for (let i = 0; i < 3; i++) own.push(await createProvider(shuffled, { VCPU: { total: 8 } }));
      // limit=1 leaves one candidate: the first in id order, not a random one, so every claim lands on the first node.
      for (let i = 0; i < 4; i++) {
        const res = await shuffled.request("POST", "/claims?resources=VCPU:1&limit=1", { body: claimBody({ pick: "first" }), version: "1.39" });
        expect(res.status, res.text).toBe(200);
        expect(chosen(res)).toEqual([own[0].uuid]);
      }
      expect(await brokenInvariants(shuffled)).toEqual([]);
    } finally {
      await shuffled.close();
    }
  });

  it("takes the query's filters as GET /allocation_candidates does (a required trait)", async () => {
    expect((await t.request("PUT", `/resource_providers/${nodes[1].uuid}/traits`, { body: { traits: [trait], resource_provider_generation: 1 } })).status).toBe(200);
    const res = await post(`resources=VCPU:1&required=${trait}`, claimBody({ pick: "spread" }));
    expect(res.status, res.text).toBe(200);
    expect(chosen(res)).toEqual([nodes[1].uuid]);
  });

  it("returns alternates that still fit after the claim, best first, without the claimed one", async () => {
    const res = await post("resources=VCPU:4", claimBody({ pick: "pack", alternates: 5 }));
    expect(res.status, res.text).toBe(200);
    expect(chosen(res)).toEqual([nodes[0].uuid]);
    // nodes[0] is full now; nodes[1] (6 free) packs better than nodes[2] (8 free).
    expect(res.body.alternates).toEqual([
      { allocations: { [nodes[1].uuid]: { resources: { VCPU: 4 } } }, mappings: { "": [nodes[1].uuid] } },
      { allocations: { [nodes[2].uuid]: { resources: { VCPU: 4 } } }, mappings: { "": [nodes[2].uuid] } },
    ]);
    // Before 1.34 an allocation request has no mappings, as in GET /allocation_candidates.
    const old = await post("resources=VCPU:1", claimBody({ alternates: 1 }), "1.30");
    expect(chosen(old)).toEqual([nodes[1].uuid]);
    expect(old.body.alternates).toEqual([{ allocations: { [nodes[2].uuid]: { resources: { VCPU: 1 } } } }]);
  });
});

describe("POST /claims with several consumers", () => {
  it("claims one instance per consumer, packing them", async () => {
    const who = [consumer(), consumer(), consumer()];
    const res = await post("resources=VCPU:2", claimBody({}, who));
    expect(res.status, res.text).toBe(200);
    expect(res.body.claims.map((c: any) => Object.keys(c.allocations)[0])).toEqual([nodes[0].uuid, nodes[0].uuid, nodes[1].uuid]);
    expect(res.body.unplaced).toEqual([]);
    for (const w of who) expect(Object.keys(await allocationsOf(t, w.consumer_uuid))).toHaveLength(1);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("all or nothing: when not every consumer fits, nothing is left behind", async () => {
    const who = Array.from({ length: 4 }, () => consumer());
    const res = await post("resources=VCPU:5", claimBody({}, who));
    expect(res.status).toBe(409);
    expect(res.body.errors[0].detail).toContain("only 2 of 4 consumers fit, and all_or_nothing is set; nothing was claimed.");
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = ANY($1)", [who.map((w) => w.consumer_uuid)])).toEqual([]);
    expect(await t.sql("SELECT sum(used)::int AS n FROM allocations")).toEqual([{ n: 6 }]);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("as many as fit: claims what fits and names the rest", async () => {
    const who = Array.from({ length: 4 }, () => consumer());
    const res = await post("resources=VCPU:5", claimBody({ all_or_nothing: false }, who));
    expect(res.status, res.text).toBe(200);
    expect(res.body.claims.map((c: any) => c.consumer_uuid)).toEqual([who[0].consumer_uuid, who[1].consumer_uuid]);
    expect(res.body.unplaced).toEqual([who[2].consumer_uuid, who[3].consumer_uuid]);
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = ANY($1)", [who.slice(2).map((w) => w.consumer_uuid)])).toEqual([]);
    expect(await brokenInvariants(t)).toEqual([]);
  });
});

describe("POST /claims refusals", () => {
  it("409 with the reason when no candidate matches, and nothing written", async () => {
    const who = consumer();
    const res = await post("resources=VCPU:9", claimBody({}, [who]));
    expect(res.status).toBe(409);
    expect(res.body.errors[0].detail).toContain("Unable to claim: no allocation candidates match the request.");
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [who.consumer_uuid])).toEqual([]);
  });

  it("409 for a consumer that exists already, as PUT /allocations with consumer_generation null", async () => {
    const who = consumer();
    expect((await post("resources=VCPU:1", claimBody({}, [who]))).status).toBe(200);
    const res = await post("resources=VCPU:1", claimBody({}, [who]));
    expect(res.status).toBe(409);
    expect(res.body.errors[0].code).toBe("placement.concurrent_update");
    expect(res.body.errors[0].detail).toContain("consumer generation conflict - expected 1 but got None");
  });

  it("400 for the query's errors, worded as GET /allocation_candidates words them", async () => {
    for (const query of ["resources=VCPU:x", "resources=CUSTOM_NOPE:1", "resources=VCPU:1&bogus=1", `resources=VCPU:1&required=CUSTOM_NOPE`]) {
      const claimed = await post(query, claimBody());
      const listed = await t.request("GET", `/allocation_candidates?${query}`);
      expect(listed.status).toBe(400);
      expect([claimed.status, claimed.body.errors[0].detail]).toEqual([400, listed.body.errors[0].detail]);
    }
  });

  it("400 for a bad body", async () => {
    for (const body of [{}, { consumers: [] }, claimBody({ pick: "best" }), claimBody({ alternates: -1 }), { consumers: [{ consumer_uuid: "x" }] }, claimBody({ extra: 1 })]) {
      const res = await post("resources=VCPU:1", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors[0].detail).toContain("JSON does not validate");
    }
    const twice = consumer();
    const res = await post("resources=VCPU:1", claimBody({}, [twice, twice]));
    expect([res.status, res.body.errors[0].detail]).toEqual([400, expect.stringContaining(`Consumer ${twice.consumer_uuid} is named more than once.`)]);
  });

  it("words the body's errors before the query's unknown names, though the answer is read while the body is", async () => {
    const twice = consumer();
    for (const query of ["resources=CUSTOM_NOPE:1", "resources=VCPU:1&required=CUSTOM_NOPE"]) {
      const bad = await post(query, { consumers: [] });
      expect([bad.status, bad.body.errors[0].detail]).toEqual([400, expect.stringContaining("JSON does not validate")]);
      const repeated = await post(query, claimBody({}, [twice, twice]));
      expect([repeated.status, repeated.body.errors[0].detail]).toEqual([400, expect.stringContaining("is named more than once")]);
      const unsupported = await t.request("POST", `/claims?${query}`, { body: "x", headers: { "content-type": "text/plain" } });
      expect(unsupported.status).toBe(415);
    }
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [twice.consumer_uuid])).toEqual([]);
  });

  it("does not exist before 1.10, as GET /allocation_candidates; other methods get 405", async () => {
    expect((await post("resources=VCPU:1", claimBody(), "1.9")).status).toBe(404);
    const res = await t.request("GET", "/claims");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  });
});
