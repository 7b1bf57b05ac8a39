/**
 * Helpers for the provider, inventory and aggregate tests: providers are made
 * through the API (that is what is under test); allocations are written
 * straight into the tables so these tests do not depend on the allocation
 * routes; snapshots read every table these routes can write.
 */
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import type { Harness, TestResponse } from "../support/harness.js";

export async function makeProvider(t: Harness, opts: { parent?: string; name?: string; uuid?: string } = {}): Promise<string> {
  const uuid = opts.uuid ?? randomUUID();
  const body: Record<string, unknown> = { uuid, name: opts.name ?? `rp-${uuid}` };
  if (opts.parent) body.parent_provider_uuid = opts.parent;
  const res = await t.request("POST", "/resource_providers", { body, version: "1.20" });
  expect(res.status, res.text).toBe(200);
  return uuid;
}

export async function putInventories(t: Harness, uuid: string, inventories: Record<string, object>): Promise<TestResponse> {
  const gen = (await t.request("GET", `/resource_providers/${uuid}`)).body.generation;
  const res = await t.request("PUT", `/resource_providers/${uuid}/inventories`, {
    body: { resource_provider_generation: gen, inventories },
  });
  expect(res.status, res.text).toBe(200);
  return res;
}

/** Gives `consumer` (created on the fly) `used` units of `cls` on the provider, bypassing the API. */
export async function allocate(t: Harness, providerUuid: string, cls: string, used: number, consumer = randomUUID()): Promise<void> {
  const [project] = await t.sql<{ id: number }>(
    "INSERT INTO projects (external_id) VALUES ($1) ON CONFLICT (external_id) DO UPDATE SET external_id = EXCLUDED.external_id RETURNING id",
    ["provider-tests"],
  );
  const [user] = await t.sql<{ id: number }>(
    "INSERT INTO users (external_id) VALUES ($1) ON CONFLICT (external_id) DO UPDATE SET external_id = EXCLUDED.external_id RETURNING id",
    ["provider-tests"],
  );
  const [c] = await t.sql<{ id: number }>("INSERT INTO consumers (uuid, project_id, user_id) VALUES ($1, $2, $3) RETURNING id", [
    consumer,
    project.id,
    user.id,
  ]);
  await t.sql(
    `INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
     SELECT rp.id, $2, rc.id, $4 FROM resource_providers rp, resource_classes rc WHERE rp.uuid = $1 AND rc.name = $3`,
    [providerUuid, c.id, cls, used],
  );
}

export async function generationOf(t: Harness, uuid: string): Promise<number> {
  const [row] = await t.sql<{ generation: number }>("SELECT generation FROM resource_providers WHERE uuid = $1", [uuid]);
  return row.generation;
}

/** Everything the provider, inventory and aggregate routes can change, in a comparable form. */
export async function snapshot(t: Harness): Promise<unknown> {
  return {
    providers: await t.sql(
      "SELECT id, uuid, name, generation, parent_provider_id, root_provider_id, updated_at FROM resource_providers ORDER BY id",
    ),
    inventories: await t.sql("SELECT * FROM inventories ORDER BY id"),
    aggregates: await t.sql("SELECT id, uuid FROM aggregates ORDER BY id"),
    links: await t.sql("SELECT * FROM resource_provider_aggregates ORDER BY resource_provider_id, aggregate_id"),
    classes: await t.sql("SELECT id, name FROM resource_classes ORDER BY id"),
  };
}

/** Placement's error body: one error with status, title, detail, code and request id. */
/** `code: null` for microversions before 1.23, which have no error codes. */
export function expectError(res: TestResponse, status: number, detail: string | RegExp, code: string | null = "placement.undefined_code"): void {
  expect(res.status, res.text).toBe(status);
  expect(res.body.errors).toHaveLength(1);
  const [error] = res.body.errors;
  expect(error.status).toBe(status);
  expect(error.code).toBe(code ?? undefined);
  expect(error.request_id).toBe(res.headers.get("x-openstack-request-id"));
  if (typeof detail === "string") expect(error.detail).toContain(detail);
  else expect(error.detail).toMatch(detail);
  // Nothing internal leaks into the detail.
  expect(error.detail).not.toMatch(/SELECT|INSERT|UPDATE |constraint|at .*\.js/);
}
