import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { allocate, expectError, makeProvider, putInventories } from "./support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

describe("POST /resource_providers", () => {
  it("answers 201 with only a Location before 1.20", async () => {
    const uuid = randomUUID();
    const res = await t.request("POST", "/resource_providers", { version: "1.19", body: { name: `old-${uuid}`, uuid } });
    expect(res.status).toBe(201);
    expect(res.text).toBe("");
    expect(res.headers.get("content-type")).toBeNull();
    expect(res.headers.get("location")).toBe(`http://localhost/resource_providers/${uuid}`);
  });

  it("returns the provider from 1.20, generating a uuid when none is given", async () => {
    const name = `new-${randomUUID()}`;
    const res = await t.request("POST", "/resource_providers", { version: "1.20", body: { name } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name, generation: 0, parent_provider_uuid: null });
    expect(res.body.root_provider_uuid).toBe(res.body.uuid);
    expect(res.headers.get("location")).toBe(`http://localhost/resource_providers/${res.body.uuid}`);
    expect(res.headers.get("last-modified")).toMatch(/GMT$/);
  });

  it("stores a dashless or upper-case uuid in canonical form and treats it as the same uuid", async () => {
    const uuid = randomUUID();
    const res = await t.request("POST", "/resource_providers", { body: { name: `a-${uuid}`, uuid: uuid.replace(/-/g, "").toUpperCase() } });
    expect(res.body.uuid).toBe(uuid);
    const again = await t.request("POST", "/resource_providers", { body: { name: `b-${uuid}`, uuid } });
    expectError(again, 409, `Conflicting resource provider uuid: ${uuid} already exists.`, "placement.duplicate_name");
  });

  it("refuses a duplicate name with Placement's wording", async () => {
    const uuid = await makeProvider(t);
    const res = await t.request("POST", "/resource_providers", { body: { name: `rp-${uuid}` } });
    expectError(res, 409, `Conflicting resource provider name: rp-${uuid} already exists.`, "placement.duplicate_name");
  });

  it("creates children under a parent, inheriting its root", async () => {
    const root = await makeProvider(t);
    const child = await makeProvider(t, { parent: root });
    const grandchild = await makeProvider(t, { parent: child });
    const res = await t.request("GET", `/resource_providers/${grandchild}`);
    expect(res.body).toMatchObject({ parent_provider_uuid: child, root_provider_uuid: root });
  });

  it("refuses a missing parent, a self parent and parents before 1.14", async () => {
    const uuid = randomUUID();
    const missing = await t.request("POST", "/resource_providers", {
      body: { name: `x-${uuid}`, uuid, parent_provider_uuid: randomUUID() },
    });
    expectError(missing, 400, `Unable to create resource provider "x-${uuid}", ${uuid}: Object action create failed because: parent provider UUID does not exist.`);
    const self = await t.request("POST", "/resource_providers", { body: { name: `x-${uuid}`, uuid, parent_provider_uuid: uuid } });
    expectError(self, 400, "parent provider UUID cannot be same as UUID");
    const old = await t.request("POST", "/resource_providers", {
      version: "1.13",
      body: { name: `x-${uuid}`, parent_provider_uuid: await makeProvider(t) },
    });
    expectError(old, 400, "Additional properties are not allowed ('parent_provider_uuid' was unexpected)", null);
  });
});

describe("GET /resource_providers", () => {
  it("filters by name, uuid and in_tree, in creation order", async () => {
    const root = await makeProvider(t);
    const child = await makeProvider(t, { parent: root });
    const other = await makeProvider(t);
    const byName = await t.request("GET", `/resource_providers?name=rp-${child}`);
    expect(byName.body.resource_providers.map((p: any) => p.uuid)).toEqual([child]);
    const byUuid = await t.request("GET", `/resource_providers?uuid=${other}`);
    expect(byUuid.body.resource_providers.map((p: any) => p.uuid)).toEqual([other]);
    const tree = await t.request("GET", `/resource_providers?in_tree=${child}`);
    expect(tree.body.resource_providers.map((p: any) => p.uuid)).toEqual([root, child]);
    const none = await t.request("GET", `/resource_providers?in_tree=${randomUUID()}`);
    expect(none.body.resource_providers).toEqual([]);
    // No stored name can contain NUL: an empty list, not a database error.
    const nul = await t.request("GET", "/resource_providers?name=a%00b");
    expect(nul.status).toBe(200);
    expect(nul.body.resource_providers).toEqual([]);
  });

  it("shapes links and tree fields per microversion", async () => {
    const uuid = await makeProvider(t);
    const rels = async (version: string) =>
      (await t.request("GET", `/resource_providers/${uuid}`, { version })).body.links.map((l: any) => l.rel);
    expect(await rels("1.0")).toEqual(["self", "inventories", "usages"]);
    expect(await rels("1.1")).toEqual(["self", "inventories", "usages", "aggregates"]);
    expect(await rels("1.6")).toEqual(["self", "inventories", "usages", "aggregates", "traits"]);
    expect(await rels("1.11")).toEqual(["self", "inventories", "usages", "aggregates", "traits", "allocations"]);
    const v13 = await t.request("GET", `/resource_providers/${uuid}`, { version: "1.13" });
    expect(Object.keys(v13.body).sort()).toEqual(["generation", "links", "name", "uuid"]);
    expect(v13.headers.get("last-modified")).toBeNull();
  });

  it("answers 404 with Placement's wording for an unknown provider", async () => {
    const uuid = randomUUID();
    expectError(await t.request("GET", `/resource_providers/${uuid}`), 404, `No resource provider with uuid ${uuid} found`);
  });
});

describe("PUT /resource_providers/{uuid}", () => {
  it("renames without bumping the generation", async () => {
    const uuid = await makeProvider(t);
    const res = await t.request("PUT", `/resource_providers/${uuid}`, { body: { name: `renamed-${uuid}` } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: `renamed-${uuid}`, generation: 0 });
    expect(res.headers.get("location")).toBeNull();
  });

  it("refuses a name another provider has", async () => {
    const a = await makeProvider(t);
    const b = await makeProvider(t);
    const res = await t.request("PUT", `/resource_providers/${b}`, { body: { name: `rp-${a}` } });
    expectError(res, 409, `Conflicting resource provider rp-${a} already exists.`, "placement.duplicate_name");
  });

  it("gives a root a parent at 1.14, but moves and un-parents only from 1.37", async () => {
    const p1 = await makeProvider(t);
    const p2 = await makeProvider(t);
    const child = await makeProvider(t);
    const grandchild = await makeProvider(t, { parent: child });
    const put = (version: string, parent: string | null) =>
      t.request("PUT", `/resource_providers/${child}`, { version, body: { name: `rp-${child}`, parent_provider_uuid: parent } });

    expect((await put("1.14", p1)).body).toMatchObject({ parent_provider_uuid: p1, root_provider_uuid: p1 });
    expect((await t.request("GET", `/resource_providers/${grandchild}`)).body.root_provider_uuid).toBe(p1);
    expectError(await put("1.36", p2), 400, "re-parenting a provider is not currently allowed.");
    expectError(await put("1.36", null), 400, "un-parenting a provider is not currently allowed.");

    expect((await put("1.37", p2)).body).toMatchObject({ parent_provider_uuid: p2, root_provider_uuid: p2 });
    expect((await t.request("GET", `/resource_providers/${grandchild}`)).body.root_provider_uuid).toBe(p2);
    expect((await put("1.37", null)).body).toMatchObject({ parent_provider_uuid: null, root_provider_uuid: child });
    expect((await t.request("GET", `/resource_providers/${grandchild}`)).body.root_provider_uuid).toBe(child);
  });

  it("refuses loops: a provider under itself or under its own descendant", async () => {
    const root = await makeProvider(t);
    const child = await makeProvider(t, { parent: root });
    const grandchild = await makeProvider(t, { parent: child });
    for (const parent of [root, child, grandchild]) {
      const res = await t.request("PUT", `/resource_providers/${root}`, { body: { name: `rp-${root}`, parent_provider_uuid: parent } });
      expectError(res, 400, "creating loop in the provider tree is not allowed.");
    }
  });

  it("checks the content type first, then the provider (404), then the body", async () => {
    const ghost = `/resource_providers/${randomUUID()}`;
    const noBody = await t.request("PUT", ghost);
    expectError(noBody, 415, "The media type None is not supported, use application/json");
    const res = await t.request("PUT", ghost, { body: { bogus: true } });
    expect(res.status).toBe(404);
  });
});

describe("DELETE /resource_providers/{uuid}", () => {
  it("deletes a provider with its inventories, traits and aggregate links", async () => {
    const uuid = await makeProvider(t);
    await putInventories(t, uuid, { DISK_GB: { total: 10 } });
    await t.request("PUT", `/resource_providers/${uuid}/aggregates`, { body: { aggregates: [randomUUID()], resource_provider_generation: 1 } });
    expect((await t.request("DELETE", `/resource_providers/${uuid}`)).status).toBe(204);
    expect(await t.sql("SELECT 1 FROM resource_providers WHERE uuid = $1", [uuid])).toEqual([]);
    expectError(await t.request("DELETE", `/resource_providers/${uuid}`), 404, `No resource provider with uuid ${uuid} found for delete`);
  });

  it("keeps a parent while it has children", async () => {
    const root = await makeProvider(t);
    await makeProvider(t, { parent: root });
    const res = await t.request("DELETE", `/resource_providers/${root}`);
    expectError(
      res,
      409,
      `Unable to delete parent resource provider ${root}: It has child resource providers.`,
      "placement.resource_provider.cannot_delete_parent",
    );
  });

  it("keeps a provider that has allocations", async () => {
    const uuid = await makeProvider(t);
    await putInventories(t, uuid, { VCPU: { total: 4 } });
    await allocate(t, uuid, "VCPU", 1);
    const res = await t.request("DELETE", `/resource_providers/${uuid}`);
    expectError(res, 409, `Unable to delete resource provider ${uuid}: Resource provider has allocations.`, "placement.resource_provider.inuse");
  });
});
