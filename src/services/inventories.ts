/**
 * Inventories: what each provider offers per resource class. Every write
 * runs under the provider's row lock and bumps its generation in the same
 * transaction, so a writer holding a stale generation always gets a 409.
 *
 * As in Placement, an update that leaves existing allocations over the new
 * capacity is allowed (hosts get overcommitted and operators shrink them
 * deliberately); only removing an inventory that still has allocations is
 * refused (409 `placement.inventory.inuse`).
 */
import { and, asc, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { Queryable, Tx } from "../db/database.js";
import { allocations, inventories, resourceClasses } from "../db/schema.js";
import { ClassNotFound, InvalidInventory, InventoryExists, InventoryInUse, InventoryNotFound } from "./errors.js";
import {
  bumpProviderGeneration,
  canBeStored,
  checkGeneration,
  getProviderByUuid,
  lockProviderForNoKeyUpdate,
  type ProviderRow,
} from "./providers.js";
import { capacityOf } from "./rules/capacity.js";
import { writeTransaction, type Store } from "./store.js";

/** Largest value of an integer inventory field (a signed 32-bit column). */
export const MAX_INT = 2147483647;

export type InventoryData = {
  total: number;
  reserved: number;
  minUnit: number;
  maxUnit: number;
  stepSize: number;
  allocationRatio: number;
};

export interface InventoryView extends InventoryData {
  resourceClass: string;
  createdAt: Date | null;
  updatedAt: Date | null;
}

/** Placement's defaults for fields a client leaves out (max_unit: no limit). */
export const INVENTORY_DEFAULTS: Omit<InventoryData, "total"> = {
  reserved: 0,
  minUnit: 1,
  maxUnit: MAX_INT,
  stepSize: 1,
  allocationRatio: 1.0,
};

/**
 * Placement's inventory rule (_validate_inventory_capacity): the capacity,
 * int((total - reserved) * allocation_ratio), must be positive before 1.26
 * and not negative from 1.26 (a provider kept fully reserved). So a ratio of
 * 0 is refused before 1.26 and accepted after, and so is a negative ratio
 * whose product is above -1 (int() truncates it to 0); a lower product is
 * always refused. The capacity is rules/capacity.ts's, the one every
 * allocation write and the audit use. Its message speaks of reserved and
 * total whatever the cause. Throws InvalidInventory for the first inventory
 * that breaks it.
 */
export function assertCapacity(
  providerUuid: string,
  items: Map<string, InventoryData>,
  reservedMayEqualTotal: boolean,
  during: InvalidInventory["during"],
): void {
  for (const [rc, inv] of items) {
    const capacity = capacityOf(inv);
    // Placement lets a negative ratio turn reserved > total into a positive capacity; we never keep reserved above
    // total (docs/placement-bugs.md).
    if (inv.reserved > inv.total || (reservedMayEqualTotal ? capacity < 0 : capacity <= 0)) throw new InvalidInventory(providerUuid, rc, reservedMayEqualTotal, during);
  }
}

/** GET /resource_providers/{uuid}/inventories: the provider and its inventories, in class id order. */
export async function getProviderInventories(q: Queryable, uuid: string): Promise<{ provider: ProviderRow; inventories: InventoryView[] }> {
  const provider = await getProviderByUuid(q, uuid, "list inventories");
  return { provider, inventories: await listInventories(q, provider.id) };
}

/** GET /resource_providers/{uuid}/inventories/{rc}: the provider and its inventory of one class. */
export async function getProviderInventory(
  q: Queryable,
  uuid: string,
  rc: string,
): Promise<{ provider: ProviderRow; inventory: InventoryView }> {
  const { provider, inventories: all } = await getProviderInventories(q, uuid);
  const inventory = all.find((r) => r.resourceClass === rc);
  if (!inventory) throw new InventoryNotFound(provider.uuid, rc, "show");
  return { provider, inventory };
}

export async function listInventories(q: Queryable, providerId: number): Promise<InventoryView[]> {
  return q
    .select({
      resourceClass: resourceClasses.name,
      total: inventories.total,
      reserved: inventories.reserved,
      minUnit: inventories.minUnit,
      maxUnit: inventories.maxUnit,
      stepSize: inventories.stepSize,
      allocationRatio: inventories.allocationRatio,
      createdAt: inventories.createdAt,
      updatedAt: inventories.updatedAt,
    })
    .from(inventories)
    .innerJoin(resourceClasses, eq(resourceClasses.id, inventories.resourceClassId))
    .where(eq(inventories.resourceProviderId, providerId))
    .orderBy(asc(inventories.resourceClassId));
}

/** Names of the given classes that still have allocations against the provider. */
async function classesInUse(tx: Tx, providerId: number, classIds: number[]): Promise<string[]> {
  if (classIds.length === 0) return [];
  const rows = await tx
    .selectDistinct({ id: allocations.resourceClassId, name: resourceClasses.name })
    .from(allocations)
    .innerJoin(resourceClasses, eq(resourceClasses.id, allocations.resourceClassId))
    .where(and(eq(allocations.resourceProviderId, providerId), inArray(allocations.resourceClassId, classIds)))
    .orderBy(asc(allocations.resourceClassId));
  return rows.map((r) => r.name);
}

export async function classIdsByName(tx: Tx, wanted: string[]): Promise<Map<string, number>> {
  // A name PostgreSQL cannot store (NUL) names no class: leave it out rather than fail the query.
  const names = wanted.filter(canBeStored);
  if (names.length === 0) return new Map();
  // KEY SHARE: a concurrent DELETE of the class (which locks it FOR UPDATE)
  // waits for us and then sees the inventory as a use of the class, instead
  // of our insert failing on the foreign key after the class vanished.
  const rows = await tx
    .select({ id: resourceClasses.id, name: resourceClasses.name })
    .from(resourceClasses)
    .where(inArray(resourceClasses.name, names))
    .for("key share");
  return new Map(rows.map((r) => [r.name, r.id]));
}

const columns = (inv: InventoryData) => ({
  total: inv.total,
  reserved: inv.reserved,
  minUnit: inv.minUnit,
  maxUnit: inv.maxUnit,
  stepSize: inv.stepSize,
  allocationRatio: inv.allocationRatio,
});

/**
 * The inventory rows of the providers `providerIds` (a subquery or an array
 * expression) and of every provider the consumers `consumerIds` hold
 * allocations on, locked in id order: a SELECT to run as one statement or
 * as a CTE.
 *
 * Why: triggers on allocations keep `inventories.used` (migration
 * inventory_usage_triggers) and lock the rows each statement changes, in id
 * order within that statement. A transaction that changes allocations or
 * inventories in several statements (a rewrite deletes a consumer's old
 * allocations, then inserts the new ones) would take those locks in several
 * batches in no fixed order, and two such transactions, or one and a
 * DELETE of a consumer's allocations, could each hold a row the other waits
 * for. Taking every row it will change in one id-ordered batch, after its
 * consumer and provider locks, keeps one global order: consumers, providers,
 * inventory rows. A transaction that changes usage in one statement needs
 * nothing more than the trigger's own batch.
 */
export function inventoryRowsToLock(providerIds: SQL, consumerIds: readonly number[]): SQL {
  // One array of a union, not an OR of two INs: PostgreSQL answers the OR by reading every inventory row.
  // An array, not an IN, so a row waited for is checked again against a value, not through a join (see
  // the provider lock in allocations.ts).
  return sql`SELECT id FROM inventories
    WHERE resource_provider_id = ANY(ARRAY(${providerIds}
                                           UNION ALL
                                           SELECT resource_provider_id FROM allocations WHERE consumer_id = ANY(${sql.param(consumerIds)}::int[])))
    ORDER BY id FOR UPDATE`;
}

/**
 * Makes `items` the provider's whole inventory: adds, updates and removes
 * rows, then bumps the generation. The caller holds the provider's row lock
 * (and has checked the generation the client sent). Unknown classes are a
 * ClassNotFound; removing a class that has allocations an InventoryInUse.
 */
export async function setProviderInventories(
  tx: Tx,
  provider: ProviderRow,
  items: Map<string, InventoryData>,
  during: "replace" | "delete all",
): Promise<number> {
  const ids = await classIdsByName(tx, [...items.keys()]);
  for (const rc of items.keys()) {
    if (!ids.has(rc)) throw new ClassNotFound(rc, { in: "inventories", provider: provider.uuid });
  }
  // All of the provider's rows, locked at once in id order (see inventoryRowsToLock).
  const existing = await tx
    .select({ id: inventories.resourceClassId })
    .from(inventories)
    .where(eq(inventories.resourceProviderId, provider.id))
    .orderBy(asc(inventories.id))
    .for("update");
  const wanted = new Set(ids.values());
  const toDelete = existing.map((r) => r.id).filter((id) => !wanted.has(id));
  const inUse = await classesInUse(tx, provider.id, toDelete);
  if (inUse.length > 0) throw new InventoryInUse(provider.uuid, inUse, during);
  if (toDelete.length > 0) {
    await tx.delete(inventories).where(and(eq(inventories.resourceProviderId, provider.id), inArray(inventories.resourceClassId, toDelete)));
  }
  const existingIds = new Set(existing.map((r) => r.id));
  const now = new Date();
  for (const [rc, inv] of items) {
    const classId = ids.get(rc)!;
    if (existingIds.has(classId)) {
      await tx
        .update(inventories)
        .set({ ...columns(inv), updatedAt: now })
        .where(and(eq(inventories.resourceProviderId, provider.id), eq(inventories.resourceClassId, classId)));
    } else {
      await tx.insert(inventories).values({ resourceProviderId: provider.id, resourceClassId: classId, ...columns(inv) });
    }
  }
  return bumpProviderGeneration(tx, provider, { generation: provider.generation, writing: "inventories" });
}

/** PUT /resource_providers/{uuid}/inventories. Returns the new generation. */
export async function replaceInventories(
  store: Store,
  providerUuid: string,
  expectedGeneration: number,
  items: Map<string, InventoryData>,
  reservedMayEqualTotal: boolean,
): Promise<number> {
  return writeTransaction(store, async (tx) => {
    const provider = await lockProviderForNoKeyUpdate(tx, providerUuid);
    checkGeneration(provider, expectedGeneration, "inventories");
    assertCapacity(provider.uuid, items, reservedMayEqualTotal, "update");
    return setProviderInventories(tx, provider, items, "replace");
  });
}

/** DELETE /resource_providers/{uuid}/inventories (1.5): no generation from the client. */
export async function deleteAllInventories(store: Store, providerUuid: string): Promise<number> {
  return writeTransaction(store, (tx) => deleteAllInventoriesIn(tx, providerUuid));
}

async function deleteAllInventoriesIn(tx: Tx, providerUuid: string): Promise<number> {
  const provider = await lockProviderForNoKeyUpdate(tx, providerUuid);
  return setProviderInventories(tx, provider, new Map(), "delete all");
}

/** POST /resource_providers/{uuid}/inventories: one new class. Returns the new generation. */
export async function addInventory(
  store: Store,
  providerUuid: string,
  rc: string,
  inv: InventoryData,
  reservedMayEqualTotal: boolean,
): Promise<number> {
  return writeTransaction(store, async (tx) => {
    const provider = await lockProviderForNoKeyUpdate(tx, providerUuid);
    assertCapacity(provider.uuid, new Map([[rc, inv]]), reservedMayEqualTotal, "create");
    const classId = (await classIdsByName(tx, [rc])).get(rc);
    if (classId === undefined) throw new ClassNotFound(rc, { in: "new inventory", provider: provider.uuid });
    const inserted = await tx
      .insert(inventories)
      .values({ resourceProviderId: provider.id, resourceClassId: classId, ...columns(inv) })
      .onConflictDoNothing()
      .returning({ id: inventories.id });
    if (inserted.length === 0) throw new InventoryExists(provider.uuid, rc);
    return bumpProviderGeneration(tx, provider, { generation: provider.generation, writing: "inventories" });
  });
}

/** PUT /resource_providers/{uuid}/inventories/{rc}: change an existing class. Returns the new generation. */
export async function updateInventory(
  store: Store,
  providerUuid: string,
  expectedGeneration: number,
  rc: string,
  inv: InventoryData,
  reservedMayEqualTotal: boolean,
): Promise<number> {
  return writeTransaction(store, async (tx) => {
    const provider = await lockProviderForNoKeyUpdate(tx, providerUuid);
    checkGeneration(provider, expectedGeneration, "inventories");
    assertCapacity(provider.uuid, new Map([[rc, inv]]), reservedMayEqualTotal, "update");
    const classId = (await classIdsByName(tx, [rc])).get(rc);
    if (classId === undefined) throw new ClassNotFound(rc, { in: "inventory update" });
    const updated = await tx
      .update(inventories)
      .set({ ...columns(inv), updatedAt: new Date() })
      .where(and(eq(inventories.resourceProviderId, provider.id), eq(inventories.resourceClassId, classId)))
      .returning({ id: inventories.id });
    if (updated.length === 0) throw new InventoryNotFound(provider.uuid, rc, "update");
    return bumpProviderGeneration(tx, provider, { generation: provider.generation, writing: "inventories" });
  });
}

/** DELETE /resource_providers/{uuid}/inventories/{rc}. */
export async function deleteInventory(store: Store, providerUuid: string, rc: string): Promise<number> {
  return writeTransaction(store, (tx) => deleteInventoryIn(tx, providerUuid, rc));
}

async function deleteInventoryIn(tx: Tx, providerUuid: string, rc: string): Promise<number> {
  const provider = await lockProviderForNoKeyUpdate(tx, providerUuid);
  const classId = (await classIdsByName(tx, [rc])).get(rc);
  if (classId === undefined) throw new ClassNotFound(rc, { in: "inventory delete" });
  if ((await classesInUse(tx, provider.id, [classId])).length > 0) throw new InventoryInUse(provider.uuid, [rc], "delete one");
  const deleted = await tx
    .delete(inventories)
    .where(and(eq(inventories.resourceProviderId, provider.id), eq(inventories.resourceClassId, classId)))
    .returning({ id: inventories.id });
  if (deleted.length === 0) throw new InventoryNotFound(provider.uuid, rc, "delete");
  return bumpProviderGeneration(tx, provider, { generation: provider.generation, writing: "inventories" });
}


