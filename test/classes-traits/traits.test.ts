import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

/** A fresh custom trait name per test, so tests do not depend on each other. */
const customTrait = (tag = "") => `CUSTOM_${tag}${newUuid().replace(/-/g, "_").toUpperCase()}`;

const traitRows = async () => (await t.sql<{ id: number; name: string }>("SELECT id, name FROM traits ORDER BY id")).map((r) => `${r.id}:${r.name}`);

async function createProvider(): Promise<string> {
  const uuid = newUuid();
  const res = await t.request("POST", "/resource_providers", { version: "1.20", body: { uuid, name: `rp-${uuid}` } });
  expect(res.status).toBe(200);
  return uuid;
}

const providerTraitNames = async (uuid: string) =>
  (
    await t.sql<{ name: string }>(
      `SELECT t.name FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
       JOIN resource_providers rp ON rp.id = rpt.resource_provider_id WHERE rp.uuid = $1 ORDER BY t.id`,
      [uuid],
    )
  ).map((r) => r.name);

const generationOf = async (uuid: string) => (await t.sql("SELECT generation FROM resource_providers WHERE uuid = $1", [uuid]))[0].generation;

describe("/traits/{name}", () => {
  it("creates a custom trait (201), confirms it (204), shows it (204) and deletes it", async () => {
    const name = customTrait();
    const created = await t.request("PUT", `/traits/${name}`, { version: "1.6" });
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toBe(`/traits/${name}`);
    expect(created.headers.get("content-type")).toBeNull();
    expect((await t.request("PUT", `/traits/${name}`, { version: "1.6" })).status).toBe(204);
    expect((await t.request("GET", `/traits/${name}`, { version: "1.6" })).status).toBe(204);
    expect((await t.request("DELETE", `/traits/${name}`, { version: "1.6" })).status).toBe(204);
    expect((await t.request("GET", `/traits/${name}`, { version: "1.6" })).status).toBe(404);
  });

  it("does not exist before 1.6", async () => {
    const name = customTrait();
    expect((await t.request("PUT", `/traits/${name}`, { version: "1.5" })).status).toBe(404);
    expect((await t.request("GET", "/traits", { version: "1.5" })).status).toBe(404);
    expect(await t.sql("SELECT 1 FROM traits WHERE name = $1", [name])).toHaveLength(0);
  });

  it("refuses invalid names with Placement's message and creates nothing", async () => {
    const before = await traitRows();
    for (const name of ["TRAIT_X", "CUSTOM_ABC:1", "CUSTOM_lower", `CUSTOM_${"A".repeat(249)}`, "CUSTOM_%E2%98%83"]) {
      const res = await t.request("PUT", `/traits/${name}`, { version: "1.6" });
      expect(res.status, name).toBe(400);
      expect(res.body.errors[0].detail).toContain('A valid trait must be no longer than 255 characters, start with the prefix "CUSTOM_"');
    }
    expect(await traitRows()).toEqual(before);
  });

  it("sends cache headers from 1.15 on GET and PUT", async () => {
    const name = customTrait();
    await t.request("PUT", `/traits/${name}`, { version: "1.6" });
    const put = await t.request("PUT", `/traits/${name}`, { version: "1.15" });
    expect(put.headers.get("cache-control")).toBe("no-cache");
    expect(put.headers.get("last-modified")).toMatch(/GMT$/);
    expect((await t.request("GET", `/traits/${name}`, { version: "1.15" })).headers.get("last-modified")).toMatch(/GMT$/);
    expect((await t.request("GET", `/traits/${name}`, { version: "1.14" })).headers.get("last-modified")).toBeNull();
  });

  it("refuses to delete a standard trait, an unknown one or one in use", async () => {
    const standard = await t.request("DELETE", "/traits/HW_CPU_X86_SSE", { version: "1.6" });
    expect(standard.status).toBe(400);
    expect(standard.body.errors[0].detail).toContain("Cannot delete standard trait HW_CPU_X86_SSE.");

    const unknown = await t.request("DELETE", "/traits/CUSTOM_NEVER_MADE", { version: "1.6" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.errors[0].detail).toContain("No such trait(s): CUSTOM_NEVER_MADE.");

    const name = customTrait();
    await t.request("PUT", `/traits/${name}`, { version: "1.6" });
    const rp = await createProvider();
    await t.request("PUT", `/resource_providers/${rp}/traits`, { version: "1.6", body: { traits: [name], resource_provider_generation: 0 } });
    const inUse = await t.request("DELETE", `/traits/${name}`, { version: "1.6" });
    expect(inUse.status).toBe(409);
    expect(inUse.body.errors[0].detail).toContain(`The trait ${name} is in use by a resource provider.`);
    expect(await providerTraitNames(rp)).toEqual([name]);
  });
});

describe("GET /traits", () => {
  it("filters by name=in: and name=startswith:, in creation order", async () => {
    const tag = `T${Math.floor(Math.random() * 1e6)}_`;
    const names = [customTrait(tag), customTrait(tag), customTrait(tag)];
    for (const n of names) await t.request("PUT", `/traits/${n}`, { version: "1.6" });

    const byIn = await t.request("GET", `/traits?name=in:${names[2]},${names[0]}`, { version: "1.6" });
    expect(byIn.body.traits).toEqual([names[0], names[2]]);
    const byPrefix = await t.request("GET", `/traits?name=startswith:CUSTOM_${tag}`, { version: "1.6" });
    expect(byPrefix.body.traits).toEqual(names);
  });

  it("takes a startswith prefix literally (an underscore is no wildcard)", async () => {
    const name = customTrait("LITERALXPREFIX");
    await t.request("PUT", `/traits/${name}`, { version: "1.6" });
    const res = await t.request("GET", "/traits?name=startswith:CUSTOM_LITERAL_PREFIX", { version: "1.6" });
    expect(res.body.traits).toEqual([]);
  });

  it("lists standard traits too", async () => {
    const res = await t.request("GET", "/traits", { version: "1.6" });
    expect(res.body.traits).toContain("MISC_SHARES_VIA_AGGREGATE");
    expect(res.body.traits).toContain("HW_CPU_X86_SHA");
  });

  it("filters by associated", async () => {
    const [used, unused] = [customTrait(), customTrait()];
    await t.request("PUT", `/traits/${used}`, { version: "1.6" });
    await t.request("PUT", `/traits/${unused}`, { version: "1.6" });
    const rp = await createProvider();
    await t.request("PUT", `/resource_providers/${rp}/traits`, { version: "1.6", body: { traits: [used], resource_provider_generation: 0 } });
    const yes = await t.request("GET", `/traits?associated=true&name=in:${used},${unused}`, { version: "1.6" });
    expect(yes.body.traits).toEqual([used]);
    const no = await t.request("GET", `/traits?associated=FALSE&name=in:${used},${unused}`, { version: "1.6" });
    expect(no.body.traits).toEqual([unused]);
  });

  it("rejects bad query strings with Placement's wording", async () => {
    const badName = await t.request("GET", "/traits?name=in_abc", { version: "1.6" });
    expect(badName.status).toBe(400);
    expect(badName.body.errors[0].detail).toContain('Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "in_abc"');
    const badAssociated = await t.request("GET", "/traits?associated=xyz", { version: "1.6" });
    expect(badAssociated.status).toBe(400);
    expect(badAssociated.body.errors[0].detail).toContain('The query parameter "associated" only accepts "true" or "false"');
    const unknown = await t.request("GET", "/traits?invalid=abc", { version: "1.6" });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].detail).toContain("Invalid query string parameters: Additional properties are not allowed ('invalid' was unexpected)");
  });
});

describe("/resource_providers/{uuid}/traits", () => {
  it("sets, lists and clears a provider's traits, bumping the generation each time", async () => {
    const rp = await createProvider();
    const [a, b] = [customTrait(), customTrait()];
    await t.request("PUT", `/traits/${a}`, { version: "1.6" });
    await t.request("PUT", `/traits/${b}`, { version: "1.6" });

    const empty = await t.request("GET", `/resource_providers/${rp}/traits`, { version: "1.6" });
    expect(empty.body).toEqual({ traits: [], resource_provider_generation: 0 });

    const set = await t.request("PUT", `/resource_providers/${rp}/traits`, {
      version: "1.6",
      body: { traits: [b, a, "HW_CPU_X86_SSE", a], resource_provider_generation: 0 },
    });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ traits: ["HW_CPU_X86_SSE", a, b], resource_provider_generation: 1 });
    expect(set.headers.get("last-modified")).toBeNull();
    expect(await providerTraitNames(rp)).toEqual(["HW_CPU_X86_SSE", a, b]);

    const listed = await t.request("GET", `/resource_providers/${rp}/traits`, { version: "1.15" });
    expect(listed.body).toEqual({ traits: ["HW_CPU_X86_SSE", a, b], resource_provider_generation: 1 });
    expect(listed.headers.get("cache-control")).toBe("no-cache");

    const cleared = await t.request("DELETE", `/resource_providers/${rp}/traits`, { version: "1.6" });
    expect(cleared.status).toBe(204);
    expect(await providerTraitNames(rp)).toEqual([]);
    expect(await generationOf(rp)).toBe(2);
  });

  it("answers 404 for an unknown provider on every method", async () => {
    const uuid = newUuid();
    for (const [method, body] of [
      ["GET", undefined],
      ["PUT", { traits: [], resource_provider_generation: 0 }],
      ["DELETE", undefined],
    ] as const) {
      const res = await t.request(method, `/resource_providers/${uuid}/traits`, { version: "1.6", body });
      expect(res.status, method).toBe(404);
      expect(res.body.errors[0].detail).toContain(`No resource provider with uuid ${uuid} found`);
    }
  });

  it("rejects a stale generation, unknown traits and bad bodies, changing nothing", async () => {
    const rp = await createProvider();
    const a = customTrait();
    await t.request("PUT", `/traits/${a}`, { version: "1.6" });
    await t.request("PUT", `/resource_providers/${rp}/traits`, { version: "1.6", body: { traits: [a], resource_provider_generation: 0 } });

    const stale = await t.request("PUT", `/resource_providers/${rp}/traits`, {
      version: "1.23",
      body: { traits: [], resource_provider_generation: 0 },
    });
    expect(stale.status).toBe(409);
    expect(stale.body.errors[0].code).toBe("placement.concurrent_update");
    expect(stale.body.errors[0].detail).toContain("Resource provider's generation already changed. Please update the generation and try again.");

    const unknown = await t.request("PUT", `/resource_providers/${rp}/traits`, {
      version: "1.6",
      body: { traits: ["CUSTOM_NOT_A_TRAIT_1", a, "CUSTOM_NOT_A_TRAIT_2"], resource_provider_generation: 1 },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0].detail).toContain("No such trait CUSTOM_NOT_A_TRAIT_1, CUSTOM_NOT_A_TRAIT_2");

    const bodies: Array<[unknown, string]> = [
      [{ traits: [a] }, "'resource_provider_generation' is a required property"],
      [{ traits: [a], resource_provider_generation: "invalid_generation" }, "'invalid_generation' is not of type 'integer'"],
      [{ traits: [a], resource_provider_generation: 1.5 }, "1.5 is not of type 'integer'"],
      [{ traits: "invalid_type", resource_provider_generation: 1 }, "'invalid_type' is not of type 'array'"],
      [{ traits: [a], resource_provider_generation: 1, additional: 1 }, "Additional properties are not allowed"],
      [{ traits: [""], resource_provider_generation: 1 }, "'' is too short"],
    ];
    for (const [body, detail] of bodies) {
      const res = await t.request("PUT", `/resource_providers/${rp}/traits`, { version: "1.6", body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors[0].detail).toContain(detail);
    }
    expect(await providerTraitNames(rp)).toEqual([a]);
    expect(await generationOf(rp)).toBe(1);
  });

  it("lets exactly one of many concurrent writers with the same generation win", async () => {
    const rp = await createProvider();
    const names = Array.from({ length: 6 }, () => customTrait());
    for (const n of names) await t.request("PUT", `/traits/${n}`, { version: "1.6" });

    const results = await Promise.all(
      names.map((n) =>
        t.request("PUT", `/resource_providers/${rp}/traits`, { version: "1.23", body: { traits: [n], resource_provider_generation: 0 } }),
      ),
    );
    const winners = results.flatMap((r, i) => (r.status === 200 ? [names[i]] : []));
    expect(winners).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 200)) {
      expect(r.status).toBe(409);
      expect(r.body.errors[0].code).toBe("placement.concurrent_update");
    }
    expect(await providerTraitNames(rp)).toEqual(winners);
    expect(await generationOf(rp)).toBe(1);
  });

  it("never leaves a deleted trait assigned when deletion and assignment race", async () => {
    for (let round = 0; round < 5; round++) {
      const rp = await createProvider();
      const name = customTrait();
      await t.request("PUT", `/traits/${name}`, { version: "1.6" });
      const [assign, del] = await Promise.all([
        t.request("PUT", `/resource_providers/${rp}/traits`, { version: "1.6", body: { traits: [name], resource_provider_generation: 0 } }),
        t.request("DELETE", `/traits/${name}`, { version: "1.6" }),
      ]);
      // Either order is fine; both succeeding is not.
      expect([assign.status, del.status].sort()).toSatisfy(
        (s: number[]) => (s[0] === 200 && s[1] === 409) || (s[0] === 204 && s[1] === 400),
      );
      const exists = (await t.sql("SELECT 1 FROM traits WHERE name = $1", [name])).length === 1;
      expect(await providerTraitNames(rp)).toEqual(exists ? [name] : []);
    }
  });
});

describe("large bodies", () => {
  it("answers a PUT naming tens of thousands of unknown traits with a 400, not a database error", async () => {
    const rp = await createProvider();
    const many = Array.from({ length: 70000 }, (_, i) => `CUSTOM_MANY_${i}`);
    const res = await t.request("PUT", `/resource_providers/${rp}/traits`, { version: "1.6", body: { traits: many, resource_provider_generation: 0 } });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].detail).toContain("No such trait CUSTOM_MANY_0, CUSTOM_MANY_1");
    expect(await generationOf(rp)).toBe(0);
  });
});
