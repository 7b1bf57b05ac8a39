import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

/** A fresh custom class name per test, so tests do not depend on each other. */
const customName = () => `CUSTOM_${newUuid().replace(/-/g, "_").toUpperCase()}`;

const classRows = async () => (await t.sql<{ id: number; name: string }>("SELECT id, name FROM resource_classes ORDER BY id")).map((r) => `${r.id}:${r.name}`);

describe("listing and showing", () => {
  it("lists the standard classes first, in id order, with self links", async () => {
    const res = await t.request("GET", "/resource_classes", { version: "1.2" });
    expect(res.status).toBe(200);
    expect(res.body.resource_classes[0]).toEqual({ name: "VCPU", links: [{ rel: "self", href: "/resource_classes/VCPU" }] });
    expect(res.body.resource_classes[1].name).toBe("MEMORY_MB");
    expect(res.headers.get("last-modified")).toBeNull();
  });

  it("does not exist before 1.2", async () => {
    expect((await t.request("GET", "/resource_classes", { version: "1.1" })).status).toBe(404);
    expect((await t.request("GET", "/resource_classes/VCPU", { version: "1.1" })).status).toBe(404);
    const post = await t.request("POST", "/resource_classes", { version: "1.1", body: { name: customName() } });
    expect(post.status).toBe(404);
  });

  it("sends cache headers from 1.15", async () => {
    const list = await t.request("GET", "/resource_classes", { version: "1.15" });
    expect(list.headers.get("cache-control")).toBe("no-cache");
    expect(list.headers.get("last-modified")).toMatch(/^\w+, \d+ \w+ \d{4} [\d:]+ GMT$/);
    const show = await t.request("GET", "/resource_classes/VCPU", { version: "1.15" });
    expect(show.headers.get("last-modified")).toMatch(/GMT$/);
    expect((await t.request("GET", "/resource_classes/VCPU", { version: "1.14" })).headers.get("cache-control")).toBeNull();
  });

  it("answers 404 with Placement's wording for an unknown class", async () => {
    const res = await t.request("GET", "/resource_classes/CUSTOM_NOPE_NOPE");
    expect(res.status).toBe(404);
    expect(res.body.errors[0].detail).toContain("No such resource class CUSTOM_NOPE_NOPE.");
  });

  it("is forbidden to a non-admin", async () => {
    const res = await t.request("GET", "/resource_classes", { token: "someone" });
    expect(res.status).toBe(403);
  });
});

describe("creating with POST", () => {
  it("creates a custom class: 201, Location, no body", async () => {
    const name = customName();
    const res = await t.request("POST", "/resource_classes", { version: "1.2", body: { name } });
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/resource_classes/${name}`);
    expect(res.headers.get("content-type")).toBeNull();
    expect(res.text).toBe("");
    const [row] = await t.sql("SELECT id FROM resource_classes WHERE name = $1", [name]);
    expect(row.id).toBeGreaterThanOrEqual(10000);
    expect((await t.request("GET", `/resource_classes/${name}`)).body.name).toBe(name);
  });

  it("refuses a duplicate with 409", async () => {
    const name = customName();
    await t.request("POST", "/resource_classes", { body: { name } });
    const res = await t.request("POST", "/resource_classes", { body: { name } });
    expect(res.status).toBe(409);
    expect(res.body.errors[0].detail).toContain(`Conflicting resource class already exists: ${name}`);
  });

  it("rejects bad input with 4xx and leaves the table unchanged", async () => {
    const before = await classRows();
    const cases: Array<[unknown, number, string]> = [
      [{ name: "IRON_NFV" }, 400, "Failed validating 'pattern'"],
      [{ name: "CUSTOM_Illegal&@!Name?" }, 400, "JSON does not validate"],
      [{ name: "VCPU" }, 400, "Failed validating 'pattern'"],
      [{ name: `CUSTOM_${"S".repeat(250)}` }, 400, "Failed validating 'maxLength'"],
      [{ name: customName(), additional: 1 }, 400, "Additional properties are not allowed"],
      [{}, 400, "'name' is a required property"],
      [{ name: 7 }, 400, "7 is not of type 'string'"],
      ['{"name": }', 400, "Malformed JSON"],
    ];
    for (const [body, status, detail] of cases) {
      const res = await t.request("POST", "/resource_classes", { body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.errors[0].detail).toContain(detail);
    }
    const wrongType = await t.request("POST", "/resource_classes", {
      body: JSON.stringify({ name: customName() }),
      headers: { "content-type": "text/plain" },
    });
    expect(wrongType.status).toBe(415);
    expect(await classRows()).toEqual(before);
  });
});

describe("renaming with PUT (1.2 to 1.6)", () => {
  it("renames a custom class and answers its new representation", async () => {
    const [from, to] = [customName(), customName()];
    await t.request("POST", "/resource_classes", { body: { name: from } });
    const res = await t.request("PUT", `/resource_classes/${from}`, { version: "1.6", body: { name: to } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: to, links: [{ rel: "self", href: `/resource_classes/${to}` }] });
    expect((await t.request("GET", `/resource_classes/${from}`)).status).toBe(404);
  });

  it("refuses to rename a standard class, onto a taken name, or an unknown class", async () => {
    const [a, b] = [customName(), customName()];
    await t.request("POST", "/resource_classes", { body: { name: a } });
    await t.request("POST", "/resource_classes", { body: { name: b } });
    const before = await classRows();

    const standard = await t.request("PUT", "/resource_classes/VCPU", { version: "1.6", body: { name: a } });
    expect(standard.status).toBe(400);
    expect(standard.body.errors[0].detail).toContain("Cannot update standard resource class VCPU");

    const taken = await t.request("PUT", `/resource_classes/${b}`, { version: "1.6", body: { name: a } });
    expect(taken.status).toBe(409);
    expect(taken.body.errors[0].detail).toContain(`Resource class already exists: ${a}`);

    const unknown = await t.request("PUT", "/resource_classes/CUSTOM_NOT_THERE", { version: "1.6", body: { name: customName() } });
    expect(unknown.status).toBe(404);

    const bodiless = await t.request("PUT", `/resource_classes/${a}`, { version: "1.6", body: "" });
    expect(bodiless.status).toBe(400);
    expect(bodiless.body.errors[0].detail).toContain("Malformed JSON");
    expect(await classRows()).toEqual(before);
  });
});

describe("renaming concurrently", () => {
  it("gives a contested new name to exactly one class; the other gets the 409", async () => {
    for (let round = 0; round < 5; round++) {
      const [a, b, target] = [customName(), customName(), customName()];
      await t.request("POST", "/resource_classes", { body: { name: a } });
      await t.request("POST", "/resource_classes", { body: { name: b } });
      const results = await Promise.all(
        [a, b].map((from) => t.request("PUT", `/resource_classes/${from}`, { version: "1.6", body: { name: target } })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
      const names = (await t.sql<{ name: string }>("SELECT name FROM resource_classes WHERE name = ANY($1)", [[a, b, target]])).map((r) => r.name);
      expect(names).toHaveLength(2);
      expect(names).toContain(target);
    }
  });
});

describe("create-if-missing with PUT (1.7)", () => {
  it("creates (201) then confirms (204), both with Location", async () => {
    const name = customName();
    const first = await t.request("PUT", `/resource_classes/${name}`, { version: "1.7" });
    expect(first.status).toBe(201);
    expect(first.headers.get("location")).toBe(`/resource_classes/${name}`);
    const again = await t.request("PUT", `/resource_classes/${name}`, { version: "1.7" });
    expect(again.status).toBe(204);
    expect(again.headers.get("location")).toBe(`/resource_classes/${name}`);
    expect(await t.sql("SELECT 1 FROM resource_classes WHERE name = $1", [name])).toHaveLength(1);
  });

  it("validates the name in the path like a body's name", async () => {
    const before = await classRows();
    expect((await t.request("PUT", "/resource_classes/VCPU", { version: "1.7" })).body.errors[0].detail).toContain("Failed validating 'pattern'");
    const long = await t.request("PUT", `/resource_classes/CUSTOM_${"S".repeat(250)}`, { version: "1.7" });
    expect(long.status).toBe(400);
    expect(long.body.errors[0].detail).toContain("Failed validating 'maxLength'");
    expect(await classRows()).toEqual(before);
  });

  it("creates a class once when many create it at the same time", async () => {
    const name = customName();
    const results = await Promise.all(Array.from({ length: 8 }, () => t.request("PUT", `/resource_classes/${name}`, { version: "1.7" })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 204)).toHaveLength(7);
    expect(await t.sql("SELECT 1 FROM resource_classes WHERE name = $1", [name])).toHaveLength(1);
  });
});

describe("deleting", () => {
  it("deletes a custom class, then 404s", async () => {
    const name = customName();
    await t.request("POST", "/resource_classes", { body: { name } });
    const res = await t.request("DELETE", `/resource_classes/${name}`);
    expect(res.status).toBe(204);
    expect(await t.sql("SELECT 1 FROM resource_classes WHERE name = $1", [name])).toHaveLength(0);
    expect((await t.request("DELETE", `/resource_classes/${name}`)).status).toBe(404);
  });

  it("refuses to delete a standard class", async () => {
    const res = await t.request("DELETE", "/resource_classes/VCPU");
    expect(res.status).toBe(400);
    expect(res.body.errors[0].detail).toContain("Error in delete resource class: Cannot delete standard resource class VCPU.");
    expect(await t.sql("SELECT 1 FROM resource_classes WHERE name = 'VCPU'")).toHaveLength(1);
  });

  it("refuses to delete a class some inventory uses", async () => {
    const name = customName();
    await t.request("PUT", `/resource_classes/${name}`, { version: "1.7" });
    // Inventory written straight to the table: this test is about the class, not the inventory API.
    const [rp] = await t.sql<{ id: number }>(
      "INSERT INTO resource_providers (uuid, name, root_provider_id) VALUES ($1, $1, NULL) RETURNING id",
      [newUuid()],
    );
    await t.sql(
      "INSERT INTO inventories (resource_provider_id, resource_class_id, total, max_unit) SELECT $1, id, 5, 5 FROM resource_classes WHERE name = $2",
      [rp.id, name],
    );
    const res = await t.request("DELETE", `/resource_classes/${name}`, { version: "1.23" });
    expect(res.status).toBe(409);
    expect(res.body.errors[0].detail).toContain("Error in delete resource class");
    expect(res.body.errors[0].detail).toContain("Class is in use in inventory");
    expect(await t.sql("SELECT 1 FROM resource_classes WHERE name = $1", [name])).toHaveLength(1);
  });
});

describe("deleting while inventory is being written", () => {
  it("ends with either the class or the inventory, never an inventory of a deleted class, and no 500", async () => {
    for (let round = 0; round < 5; round++) {
      const name = customName();
      await t.request("PUT", `/resource_classes/${name}`, { version: "1.7" });
      const uuid = newUuid();
      expect((await t.request("POST", "/resource_providers", { version: "1.20", body: { uuid, name: uuid } })).status).toBe(200);
      const [inventory, del] = await Promise.all([
        t.request("PUT", `/resource_providers/${uuid}/inventories`, {
          version: "1.26",
          body: { resource_provider_generation: 0, inventories: { [name]: { total: 4 } } },
        }),
        t.request("DELETE", `/resource_classes/${name}`),
      ]);
      expect([inventory.status, del.status], `${inventory.text} ${del.text}`).toSatisfy(
        ([i, d]: number[]) => (i === 200 && d === 409) || (i === 400 && d === 204),
      );
      const classLeft = (await t.sql("SELECT 1 FROM resource_classes WHERE name = $1", [name])).length;
      const inventoryLeft = (await t.sql("SELECT 1 FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id WHERE rp.uuid = $1", [uuid])).length;
      expect([classLeft, inventoryLeft]).toSatisfy(([c, i]: number[]) => (c === 1 && i === 1) || (c === 0 && i === 0));
    }
  });
});
