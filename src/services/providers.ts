/**
 * Resource providers: lookups other services build on, the generation
 * compare-and-bump every provider write goes through, and the provider CRUD
 * behind /resource_providers.
 */
import { and, asc, eq, inArray, ne, or, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import type { Queryable, Tx } from "../db/database.js";
import { sqlState } from "../db/sql-state.js";
import { allocations, resourceProviders } from "../db/schema.js";
import {
  CannotDeleteParent,
  DuplicateProvider,
  GenerationConflict,
  InvalidProvider,
  ProviderInUse,
  ProviderNotFound,
  type ProviderLookup,
  type ProviderPart,
  type ProviderTreeProblem,
} from "./errors.js";
import { writeTransaction, type Store } from "./store.js";
import { providerFilterConditions } from "./provider-list-filters.js";
import type { ProviderListFilters } from "../query/provider-filters.js";

export type ProviderRow = typeof resourceProviders.$inferSelect;

/**
 * PostgreSQL text cannot hold NUL, so comparing with a string that has one
 * is an error, not a miss. No stored provider can match such a string: the
 * lookups answer "not found" instead of letting a path like
 * /resource_providers/a%00b become a 500.
 */
export function canBeStored(value: string): boolean {
  return !value.includes("\u0000");
}

export async function findProviderByUuid(q: Queryable, uuid: string): Promise<ProviderRow | undefined> {
  if (!canBeStored(uuid)) return undefined;
  const rows = await q.select().from(resourceProviders).where(eq(resourceProviders.uuid, uuid)).limit(1);
  return rows[0];
}

/** The provider with `uuid`; ProviderNotFound (with `during`) when there is none. */
export async function getProviderByUuid(q: Queryable, uuid: string, during: ProviderLookup = "lookup"): Promise<ProviderRow> {
  const row = await findProviderByUuid(q, uuid);
  if (!row) throw new ProviderNotFound(uuid, during);
  return row;
}

/**
 * Throws ProviderNotFound unless the provider exists. Handlers that must
 * answer an unknown provider before they read the body (as Placement does:
 * its 404 wins over a 400 for the body) call this first.
 */
export async function requireProvider(q: Queryable, uuid: string): Promise<void> {
  await getProviderByUuid(q, uuid);
}

/**
 * Provider row locks, one mode per purpose:
 * - FOR NO KEY UPDATE (lockProvidersForNoKeyUpdate, lockProviderForNoKeyUpdate):
 *   every write that changes what a provider offers or what is consumed from
 *   it (and so bumps its generation). Writers exclude each other, but rows
 *   that merely reference the provider (inventories, allocations) can still
 *   be inserted by others without waiting on a foreign-key check.
 * - FOR UPDATE (deleteProvider): deleting the row, which no referencing
 *   insert may overtake.
 * - FOR SHARE (createProvider): the parent of a new child, which must not be
 *   moved or deleted under it.
 *
 * Locks the providers' rows FOR NO KEY UPDATE until the transaction ends and
 * returns them (in id order); `which` is a list of ids or a condition. Every writer that locks more than one provider
 * takes the locks in ascending id order, so two writers can only ever wait on
 * each other in one direction and never deadlock on provider rows.
 */
export async function lockProvidersForNoKeyUpdate(tx: Tx, which: readonly number[] | SQL): Promise<ProviderRow[]> {
  const ids = Array.isArray(which) ? [...new Set(which as readonly number[])] : undefined;
  if (ids?.length === 0) return [];
  return tx
    .select()
    .from(resourceProviders)
    .where(ids ? inArray(resourceProviders.id, ids) : (which as SQL))
    .orderBy(asc(resourceProviders.id))
    .for("no key update");
}

/** Looks a provider up by uuid and locks its row FOR NO KEY UPDATE (ProviderNotFound when it does not exist). */
export async function lockProviderForNoKeyUpdate(tx: Tx, uuid: string): Promise<ProviderRow> {
  if (!canBeStored(uuid)) throw new ProviderNotFound(uuid);
  const rows = await tx.select().from(resourceProviders).where(eq(resourceProviders.uuid, uuid)).for("no key update");
  if (!rows[0]) throw new ProviderNotFound(uuid);
  return rows[0];
}

/**
 * Bumps a provider's generation. With `expected`, it is a compare-and-bump:
 * the update only happens while the row still has that generation, and a
 * stale one is a GenerationConflict. Callers lock the row first, so the
 * compare cannot race; the WHERE is the safety net. Returns the new generation.
 */
export async function bumpProviderGeneration(
  tx: Tx,
  provider: Pick<ProviderRow, "id" | "uuid">,
  expected?: { generation: number; writing: ProviderPart },
): Promise<number> {
  const condition =
    expected === undefined
      ? eq(resourceProviders.id, provider.id)
      : sql`${resourceProviders.id} = ${provider.id} AND ${resourceProviders.generation} = ${expected.generation}`;
  const rows = await tx
    .update(resourceProviders)
    .set({ generation: sql`${resourceProviders.generation} + 1`, updatedAt: sql`now()` })
    .where(condition)
    .returning({ generation: resourceProviders.generation });
  if (!rows[0]) {
    throw new GenerationConflict({ of: "provider", uuid: provider.uuid, writing: expected!.writing, given: expected!.generation });
  }
  return rows[0].generation;
}

/** Throws GenerationConflict unless the caller's generation is the provider's current one. */
export function checkGeneration(provider: ProviderRow, expected: number, writing: ProviderPart): void {
  if (provider.generation !== expected) {
    throw new GenerationConflict({ of: "provider", uuid: provider.uuid, writing, given: expected, actual: provider.generation });
  }
}

/** A provider as the API shows it: its own row plus the uuids of its parent and root. */
export interface ProviderView {
  id: number;
  uuid: string;
  name: string;
  generation: number;
  parentProviderUuid: string | null;
  rootProviderUuid: string;
  createdAt: Date | null;
  updatedAt: Date | null;
}

/** What GET /resource_providers filters on. Each set field narrows the list further (AND). */
interface ProviderFilters {
  name?: string;
  uuid?: string;
  /** Only providers in the same tree as the provider with this uuid (none when it does not exist). */
  inTree?: string;
  /** Extra conditions on `resource_providers` (member_of, required, resources from the shared query filters). */
  conditions?: SQL[];
}

const parent = alias(resourceProviders, "parent");
const root = alias(resourceProviders, "root");

function selectViews(q: Queryable) {
  return q
    .select({
      id: resourceProviders.id,
      uuid: resourceProviders.uuid,
      name: resourceProviders.name,
      generation: resourceProviders.generation,
      parentProviderUuid: parent.uuid,
      rootProviderUuid: sql<string>`coalesce(${root.uuid}, ${resourceProviders.uuid})`,
      createdAt: resourceProviders.createdAt,
      updatedAt: resourceProviders.updatedAt,
    })
    .from(resourceProviders)
    .leftJoin(parent, eq(parent.id, resourceProviders.parentProviderId))
    .leftJoin(root, eq(root.id, resourceProviders.rootProviderId));
}

/**
 * GET /resource_providers: the providers matching the list query. name, uuid
 * and in_tree are plain provider columns; member_of, required and resources
 * become SQL conditions from the filters shared with allocation candidates.
 */
export async function findProviders(q: Queryable, query: ProviderListFilters): Promise<ProviderView[]> {
  const { name, uuid, inTree } = query;
  return listProviders(q, { name, uuid, inTree, conditions: await providerFilterConditions(q, query) });
}

/** Providers matching `filters`, in creation (id) order as Placement returns them. */
async function listProviders(q: Queryable, filters: ProviderFilters): Promise<ProviderView[]> {
  if (![filters.name, filters.uuid, filters.inTree].every((v) => v === undefined || canBeStored(v))) return [];
  const conditions: SQL[] = [...(filters.conditions ?? [])];
  // An empty name filters nothing: Placement tests the name for truth, so `?name=` lists every provider.
  if (filters.name) conditions.push(eq(resourceProviders.name, filters.name));
  if (filters.uuid !== undefined) conditions.push(eq(resourceProviders.uuid, filters.uuid));
  if (filters.inTree !== undefined) {
    conditions.push(
      sql`${resourceProviders.rootProviderId} = (SELECT t.root_provider_id FROM resource_providers t WHERE t.uuid = ${filters.inTree})`,
    );
  }
  return selectViews(q)
    .where(and(...conditions))
    .orderBy(asc(resourceProviders.id));
}

export async function getProviderView(q: Queryable, uuid: string): Promise<ProviderView> {
  const rows = canBeStored(uuid) ? await selectViews(q).where(eq(resourceProviders.uuid, uuid)) : [];
  if (!rows[0]) throw new ProviderNotFound(uuid);
  return rows[0];
}

/** SQLSTATE and violated constraint of a database error, looking through drizzle's wrapping. */
function pgError(err: unknown): { code?: string; constraint?: string } {
  let e: unknown = err;
  for (let depth = 0; e && depth < 5; depth++) {
    const constraint = (e as { constraint?: unknown }).constraint;
    if (typeof constraint === "string") return { code: sqlState(err), constraint };
    e = (e as { cause?: unknown }).cause;
  }
  return { code: sqlState(err) };
}

const UNIQUE_VIOLATION = "23505";
const FOREIGN_KEY_VIOLATION = "23503";

export interface NewProvider {
  uuid: string;
  name: string;
  parentProviderUuid: string | null;
}

/**
 * Creates a provider (a root, or a child of an existing provider). Duplicate
 * uuid or name is a DuplicateProvider; a bad parent an InvalidProvider.
 */
export async function createProvider(store: Store, data: NewProvider): Promise<ProviderView> {
  return writeTransaction(store, (tx) => createProviderIn(tx, data));
}

/** createProvider inside the caller's transaction. */
export async function createProviderIn(tx: Tx, data: NewProvider): Promise<ProviderView> {
  const cannotCreate = (problem: ProviderTreeProblem) => new InvalidProvider("create", data.uuid, data.name, problem);
  if (!data.name) throw cannotCreate("name required");
  let parentRow: ProviderRow | undefined;
  if (data.parentProviderUuid !== null) {
    if (data.parentProviderUuid === data.uuid) throw cannotCreate("own parent");
    // FOR SHARE keeps the parent (and so its root) from being re-rooted or
    // deleted until this child is committed under it.
    const rows = await tx.select().from(resourceProviders).where(eq(resourceProviders.uuid, data.parentProviderUuid)).for("share");
    parentRow = rows[0];
    if (!parentRow) throw cannotCreate("parent missing");
  }
  await assertNoDuplicate(tx, data.uuid, data.name);
  let inserted: ProviderRow[];
  try {
    inserted = await tx
      .insert(resourceProviders)
      .values({
        uuid: data.uuid,
        name: data.name,
        parentProviderId: parentRow?.id ?? null,
        rootProviderId: parentRow ? (parentRow.rootProviderId ?? parentRow.id) : null,
      })
      .returning();
  } catch (err) {
    // Another transaction created the same uuid or name after our check.
    if (pgError(err).code === UNIQUE_VIOLATION) throw duplicateAfterRace(data.uuid, data.name, err);
    throw err;
  }
  const row = inserted[0];
  // Placement also sets a root's root_provider_id by an UPDATE after the
  // insert, which stamps updated_at; a child's stays empty until it changes.
  if (!parentRow) await tx.update(resourceProviders).set({ rootProviderId: row.id, updatedAt: sql`now()` }).where(eq(resourceProviders.id, row.id));
  return getProviderView(tx, row.uuid);
}

async function assertNoDuplicate(q: Queryable, uuid: string, name: string): Promise<void> {
  const rows = await q
    .select({ uuid: resourceProviders.uuid, name: resourceProviders.name })
    .from(resourceProviders)
    .where(or(eq(resourceProviders.uuid, uuid), eq(resourceProviders.name, name)));
  const clash = {
    ...(rows.some((r) => r.uuid === uuid) ? { uuid } : {}),
    ...(rows.some((r) => r.name === name) ? { name } : {}),
  };
  if (clash.uuid !== undefined || clash.name !== undefined) throw new DuplicateProvider("create", clash);
}

/** After a unique violation the transaction is aborted: name the duplicate from the constraint alone. */
function duplicateAfterRace(uuid: string, name: string, err: unknown): DuplicateProvider {
  const constraint = pgError(err).constraint ?? "";
  if (constraint.includes("name")) return new DuplicateProvider("create", { name });
  if (constraint.includes("uuid")) return new DuplicateProvider("create", { uuid });
  return new DuplicateProvider("create", { uuid, name });
}

export interface ProviderUpdate {
  name: string;
  /** Absent: keep the parent. null: make it a root. A uuid: put it under that provider. */
  parentProviderUuid?: string | null;
}

/**
 * Renames and/or re-parents a provider. Before 1.37 a provider may only gain
 * a parent; from 1.37 it may move to another parent or become a root. Moving
 * a provider moves its whole subtree to the new root. Renaming does not bump
 * the generation (Placement's generation tracks inventory, traits,
 * aggregates and allocations, not the name).
 */
export async function updateProvider(store: Store, uuid: string, update: ProviderUpdate, allowReparenting: boolean): Promise<ProviderView> {
  return writeTransaction(store, (tx) => updateProviderIn(tx, uuid, update, allowReparenting));
}

async function updateProviderIn(tx: Tx, uuid: string, update: ProviderUpdate, allowReparenting: boolean): Promise<ProviderView> {
  const cannotSave = (problem: ProviderTreeProblem) => new InvalidProvider("update", uuid, update.name, problem);
  const moving = update.parentProviderUuid !== undefined;
  if (moving) {
    // Tree changes are serialized with one transaction-level advisory lock,
    // taken before any row lock (a mover holding a row lock while waiting
    // for it could deadlock with the holder's foreign-key check on that
    // row). So two moves never each pass the loop check against the other's
    // pre-move tree. Then the moving tree's rows are locked in id order, so
    // no child is created under a provider whose root is being rewritten.
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${TREE_LOCK_KEY})`);
    const current = await getProviderByUuid(tx, uuid);
    await lockProvidersForNoKeyUpdate(tx, eq(resourceProviders.rootProviderId, current.rootProviderId ?? current.id));
  }
  const me = await lockProviderForNoKeyUpdate(tx, uuid);
  const changes: Partial<typeof resourceProviders.$inferInsert> = { name: update.name };
  let newRootId: number | undefined;
  let subtree: number[] = [];

  const target = update.parentProviderUuid;
  if (target !== undefined) {
    if (target !== null) {
      const newParent = await findProviderByUuid(tx, target);
      if (!newParent) throw cannotSave("parent missing");
      if (me.parentProviderId !== null && me.parentProviderId !== newParent.id && !allowReparenting) {
        throw cannotSave("re-parenting not allowed");
      }
      subtree = await subtreeIds(tx, me.id);
      if (subtree.includes(newParent.id)) throw cannotSave("loop");
      changes.parentProviderId = newParent.id;
      newRootId = newParent.rootProviderId ?? newParent.id;
    } else if (me.parentProviderId !== null) {
      if (!allowReparenting) throw cannotSave("un-parenting not allowed");
      subtree = await subtreeIds(tx, me.id);
      changes.parentProviderId = null;
      newRootId = me.id;
    }
  }

  if (update.name !== me.name) {
    const clash = await tx
      .select({ id: resourceProviders.id })
      .from(resourceProviders)
      .where(and(eq(resourceProviders.name, update.name), ne(resourceProviders.id, me.id)));
    if (clash.length > 0) throw new DuplicateProvider("update", { name: update.name });
  }
  // updated_at moves only with a real change, as Placement's ORM writes a row
  // only when a value differs: a PUT that changes nothing leaves it (empty
  // for a child never changed), and a move stamps every provider whose root
  // it changes. PUT answers the value from before as its Last-Modified.
  const rootChanges = newRootId !== undefined && newRootId !== (me.rootProviderId ?? me.id);
  const changed = update.name !== me.name || (changes.parentProviderId !== undefined && changes.parentProviderId !== me.parentProviderId) || rootChanges;
  try {
    await tx
      .update(resourceProviders)
      .set(changed ? { ...changes, updatedAt: sql`now()` } : changes)
      .where(eq(resourceProviders.id, me.id));
  } catch (err) {
    if (pgError(err).code === UNIQUE_VIOLATION) throw new DuplicateProvider("update", { name: update.name });
    throw err;
  }
  if (rootChanges && subtree.length > 0) {
    await tx.update(resourceProviders).set({ rootProviderId: newRootId, updatedAt: sql`now()` }).where(inArray(resourceProviders.id, subtree));
  }
  return getProviderView(tx, uuid);
}

/** Arbitrary constant naming the advisory lock that serializes provider tree changes. */
const TREE_LOCK_KEY = 7_311_001;

/** The provider and all its descendants. */
async function subtreeIds(q: Queryable, id: number): Promise<number[]> {
  const result = await q.execute<{ id: number }>(sql`
    WITH RECURSIVE subtree(id) AS (
      SELECT ${id}::integer
      UNION
      SELECT rp.id FROM resource_providers rp JOIN subtree s ON rp.parent_provider_id = s.id
    )
    SELECT id FROM subtree`);
  return result.rows.map((r) => Number(r.id));
}

/**
 * Deletes a provider with its inventories, traits and aggregate links. A
 * provider with children or allocations stays (409), as in Placement.
 */
export async function deleteProvider(store: Store, uuid: string): Promise<void> {
  return writeTransaction(store, (tx) => deleteProviderIn(tx, uuid));
}

async function deleteProviderIn(tx: Tx, uuid: string): Promise<void> {
  const rows = canBeStored(uuid) ? await tx.select().from(resourceProviders).where(eq(resourceProviders.uuid, uuid)).for("update") : [];
  const me = rows[0];
  if (!me) throw new ProviderNotFound(uuid, "delete");
  const cannotDeleteParent = () => new CannotDeleteParent(uuid);
  const inUse = () => new ProviderInUse(uuid);
  const children = await tx
    .select({ id: resourceProviders.id })
    .from(resourceProviders)
    .where(eq(resourceProviders.parentProviderId, me.id))
    .limit(1);
  if (children.length > 0) throw cannotDeleteParent();
  const used = await tx.select({ id: allocations.id }).from(allocations).where(eq(allocations.resourceProviderId, me.id)).limit(1);
  if (used.length > 0) throw inUse();
  try {
    // Inventories, traits and aggregate links go with the row (ON DELETE CASCADE).
    await tx.delete(resourceProviders).where(eq(resourceProviders.id, me.id));
  } catch (err) {
    // A child or an allocation committed between our checks and the delete.
    const { code, constraint } = pgError(err);
    if (code === FOREIGN_KEY_VIOLATION) throw constraint?.startsWith("allocations") ? inUse() : cannotDeleteParent();
    throw err;
  }
}
