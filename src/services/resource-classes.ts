/**
 * Resource classes: the standard ones (ids below 10000, seeded by the
 * migration, never changed) and CUSTOM_* ones that operators create, rename
 * and delete. Nothing is cached in memory: several server processes share the
 * database, and a name->id cache would go stale when another process renames
 * or deletes a class.
 */
import { asc, eq, sql } from "drizzle-orm";
import type { Queryable, Tx } from "../db/database.js";
import { sqlState } from "../db/sql-state.js";
import { allocations, inventories, resourceClasses } from "../db/schema.js";
import { ClassInUse, ClassNotFound, DuplicateClass, StandardNameImmutable } from "./errors.js";
import { writeTransaction, type Store } from "./store.js";

export type ResourceClassRow = typeof resourceClasses.$inferSelect;

/** Ids from here on belong to custom classes (the identity column starts here). */
export const MIN_CUSTOM_RESOURCE_CLASS_ID = 10000;

const isStandard = (rc: ResourceClassRow): boolean => rc.id < MIN_CUSTOM_RESOURCE_CLASS_ID;

export async function listResourceClasses(q: Queryable): Promise<ResourceClassRow[]> {
  return q.select().from(resourceClasses).orderBy(asc(resourceClasses.id));
}

export async function findResourceClass(q: Queryable, name: string): Promise<ResourceClassRow | undefined> {
  const rows = await q.select().from(resourceClasses).where(eq(resourceClasses.name, name)).limit(1);
  return rows[0];
}

/** The class called `name`, or ClassNotFound. */
export async function getResourceClass(q: Queryable, name: string): Promise<ResourceClassRow> {
  const rc = await findResourceClass(q, name);
  if (!rc) throw new ClassNotFound(name);
  return rc;
}

/**
 * Creates a custom class; undefined when one with that name already exists.
 * ON CONFLICT keeps a concurrent create of the same name from aborting the
 * transaction with a unique violation.
 */
async function insertResourceClass(tx: Tx, name: string): Promise<ResourceClassRow | undefined> {
  const rows = await tx.insert(resourceClasses).values({ name }).onConflictDoNothing().returning();
  return rows[0];
}

/** POST /resource_classes: DuplicateClass when the name is taken. */
export async function createResourceClass(store: Store, name: string): Promise<ResourceClassRow> {
  return writeTransaction(store, (tx) => createResourceClassIn(tx, name));
}

async function createResourceClassIn(tx: Tx, name: string): Promise<ResourceClassRow> {
  const rc = await insertResourceClass(tx, name);
  if (!rc) throw new DuplicateClass(name, "create");
  return rc;
}

/** PUT /resource_classes/{name} from 1.7: creates the class unless it exists. */
export async function ensureResourceClass(store: Store, name: string): Promise<{ resourceClass: ResourceClassRow; created: boolean }> {
  return writeTransaction(store, (tx) => ensureResourceClassIn(tx, name));
}

async function ensureResourceClassIn(tx: Tx, name: string): Promise<{ resourceClass: ResourceClassRow; created: boolean }> {
  const created = await insertResourceClass(tx, name);
  if (created) return { resourceClass: created, created: true };
  return { resourceClass: await getResourceClass(tx, name), created: false };
}

/** PUT /resource_classes/{name} before 1.7: renames a custom class. */
export async function renameResourceClass(store: Store, name: string, newName: string): Promise<ResourceClassRow> {
  return writeTransaction(store, (tx) => renameResourceClassIn(tx, name, newName));
}

async function renameResourceClassIn(tx: Tx, name: string, newName: string): Promise<ResourceClassRow> {
  const rc = await getResourceClass(tx, name);
  if (isStandard(rc)) throw new StandardNameImmutable("resource class", name, "update");
  const taken = () => new DuplicateClass(newName, "rename");
  if (newName !== name && (await findResourceClass(tx, newName))) throw taken();
  try {
    const rows = await tx
      .update(resourceClasses)
      .set({ name: newName, updatedAt: sql`now()` })
      .where(eq(resourceClasses.id, rc.id))
      .returning();
    return rows[0];
  } catch (err) {
    // Another transaction took the name between our check and the update.
    if (sqlState(err) === "23505") throw taken();
    throw err;
  }
}

/**
 * DELETE /resource_classes/{name}. The class row is locked first: inventory
 * and allocation writers that reference the class take a key-share lock on it
 * through their foreign key, so once we hold the lock no new use can appear
 * and the in-use check below cannot be overtaken.
 */
export async function deleteResourceClass(store: Store, name: string): Promise<void> {
  return writeTransaction(store, (tx) => deleteResourceClassIn(tx, name));
}

async function deleteResourceClassIn(tx: Tx, name: string): Promise<void> {
  const rows = await tx.select().from(resourceClasses).where(eq(resourceClasses.name, name)).for("update");
  const rc = rows[0];
  if (!rc) throw new ClassNotFound(name);
  if (isStandard(rc)) throw new StandardNameImmutable("resource class", name, "delete");
  const [inUse] = await tx.execute<{ used: boolean }>(
    sql`SELECT EXISTS (SELECT 1 FROM ${inventories} WHERE ${inventories.resourceClassId} = ${rc.id})
        OR EXISTS (SELECT 1 FROM ${allocations} WHERE ${allocations.resourceClassId} = ${rc.id}) AS used`,
  ).then((r) => r.rows);
  if (inUse?.used) throw new ClassInUse(name);
  await tx.delete(resourceClasses).where(eq(resourceClasses.id, rc.id));
}
