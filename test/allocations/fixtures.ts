/**
 * Test data for the allocation tests, written straight into the tables so
 * these tests depend only on the allocation code (the provider and inventory
 * routes have tests of their own), plus invariant checks read from the tables.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Harness } from "../support/harness.js";

export interface InventorySpec {
  total: number;
  reserved?: number;
  min_unit?: number;
  max_unit?: number;
  step_size?: number;
  allocation_ratio?: number;
}

export interface Provider {
  id: number;
  uuid: string;
  name: string;
}

/** A root provider with the given inventories (max_unit defaults to total). */
export async function createProvider(
  t: { sql: Harness["sql"] },
  inventories: Record<string, InventorySpec> = {},
  opts: { uuid?: string; name?: string } = {},
): Promise<Provider> {
  const uuid = opts.uuid ?? randomUUID();
  const name = opts.name ?? `rp-${uuid}`;
  const [row] = await t.sql<{ id: number }>(
    "INSERT INTO resource_providers (uuid, name) VALUES ($1, $2) RETURNING id",
    [uuid, name],
  );
  await t.sql("UPDATE resource_providers SET root_provider_id = id WHERE id = $1", [row.id]);
  for (const [cls, inv] of Object.entries(inventories)) {
    await t.sql(
      `INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
       SELECT $1, rc.id, $3, $4, $5, $6, $7, $8 FROM resource_classes rc WHERE rc.name = $2`,
      [row.id, cls, inv.total, inv.reserved ?? 0, inv.min_unit ?? 1, inv.max_unit ?? inv.total, inv.step_size ?? 1, inv.allocation_ratio ?? 1],
    );
  }
  return { id: row.id, uuid, name };
}

/** Units of `cls` allocated on the provider, summed from the allocations table. */
export async function usedOn(t: { sql: Harness["sql"] }, providerId: number, cls: string): Promise<number> {
  const [row] = await t.sql<{ used: string | null }>(
    `SELECT SUM(a.used) AS used FROM allocations a JOIN resource_classes rc ON rc.id = a.resource_class_id
     WHERE a.resource_provider_id = $1 AND rc.name = $2`,
    [providerId, cls],
  );
  return Number(row.used ?? 0);
}

export async function providerGeneration(t: { sql: Harness["sql"] }, providerId: number): Promise<number> {
  const [row] = await t.sql<{ generation: number }>("SELECT generation FROM resource_providers WHERE id = $1", [providerId]);
  return row.generation;
}

/** Every (provider, class) whose allocations exceed its capacity: must always be empty. */
export async function overcommitted(t: { sql: Harness["sql"] }): Promise<unknown[]> {
  return t.sql("SELECT provider_uuid, resource_class, used, capacity FROM provider_capacity WHERE used > capacity");
}

/**
 * Inventory rows whose stored usage (`inventories.used`, kept by triggers)
 * differs from the sum of their allocations, over the whole database: must
 * always be empty.
 */
export async function usageDrift(t: { sql: Harness["sql"] }): Promise<unknown[]> {
  return t.sql(
    `SELECT i.resource_provider_id, i.resource_class_id, i.used, coalesce(a.s, 0) AS allocated
     FROM inventories i
     LEFT JOIN (SELECT resource_provider_id, resource_class_id, sum(used) AS s FROM allocations GROUP BY 1, 2) a
       USING (resource_provider_id, resource_class_id)
     WHERE i.used <> coalesce(a.s, 0)`,
  );
}

/**
 * Allocations whose copy of their consumer's project, user or type (kept by
 * triggers for GET /usages) is not the consumer's: must always be empty.
 */
export async function ownerDrift(t: { sql: Harness["sql"] }): Promise<unknown[]> {
  return t.sql(
    `SELECT a.id FROM allocations a JOIN consumers c ON c.id = a.consumer_id
     WHERE (a.project_id, a.user_id, a.consumer_type_id) IS DISTINCT FROM (c.project_id, c.user_id, c.consumer_type_id)`,
  );
}

/**
 * Consumers that hold nothing: Placement deletes a consumer with the write
 * that removes its last allocation, and keeps one only when a write of empty
 * allocations found it holding nothing, which these tests never send; so
 * must always be empty.
 */
export async function emptyConsumers(t: { sql: Harness["sql"] }): Promise<unknown[]> {
  return t.sql("SELECT c.uuid FROM consumers c WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)");
}

export const PROJECT = "6f8f2b8e-0c2a-4d8e-9a51-1a2b3c4d5e6f";
export const USER = "3a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

/** A 1.28+ PUT body for one provider. */
export function claimBody(providerUuid: string, resources: Record<string, number>, generation: number | null = null, extra: object = {}) {
  return {
    allocations: { [providerUuid]: { resources } },
    project_id: PROJECT,
    user_id: USER,
    consumer_generation: generation,
    ...extra,
  };
}

/** Returns once another session of this database is blocked on a lock (or after 5 s). */
export async function untilSomeoneWaitsOnALock(observer: pg.Client): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const waiting = await observer.query(
      "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
    );
    if (waiting.rowCount) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}
