/**
 * The allocation write path's statements run under readable names
 * (db/prepared.ts), so pg_prepared_statements and the server's logs say which
 * step of a write a statement is: on a pool of one connection every
 * statement a write sent is prepared on the session the test reads.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness({ poolSize: 1 });
});
afterAll(async () => t?.close());

it("names every statement of PUT and DELETE /allocations after what it does", async () => {
  const rp = newUuid();
  expect((await t.request("POST", "/resource_providers", { body: { uuid: rp, name: "named-statements" } })).status).toBe(200);
  const inventories = { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } };
  expect((await t.request("PUT", `/resource_providers/${rp}/inventories`, { body: inventories })).status).toBe(200);
  const consumer = newUuid();
  const put = (generation: number | null, vcpu: number) =>
    t.request("PUT", `/allocations/${consumer}`, {
      body: { allocations: { [rp]: { resources: { VCPU: vcpu } } }, project_id: "p", user_id: "u", consumer_generation: generation, consumer_type: "INSTANCE" },
    });
  expect((await put(null, 1)).status).toBe(204);
  expect((await put(1, 2)).status).toBe(204);
  expect((await t.request("DELETE", `/allocations/${consumer}`)).status).toBe(204);

  const names = (await t.sql<{ name: string }>("SELECT name FROM pg_prepared_statements WHERE name LIKE 'pl\\_%' ORDER BY name")).map((r) => r.name);
  expect(names).toEqual(
    expect.arrayContaining([
      "pl_delete_consumer_allocations",
      "pl_delete_emptied_consumers",
      "pl_lock_consumers",
      "pl_lock_providers_resolve_classes",
      "pl_release_allocations",
      "pl_upsert_consumers",
      "pl_write_allocations",
    ]),
  );
});
