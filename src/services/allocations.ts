/**
 * Allocations: what consumers hold on providers, and the one write path
 * (`replaceAllocations`) that PUT /allocations/{uuid}, POST /allocations and
 * POST /reshaper share.
 *
 * Why concurrent claims cannot overcommit a provider: a write locks, in one
 * transaction, first the consumer rows it rewrites (in uuid order, by the
 * upsert that also creates new ones) and then the provider rows it allocates
 * from (in id order, SELECT ... FOR NO KEY UPDATE, the provider writers' lock:
 * see lockProvidersForNoKeyUpdate).
 * Every writer that adds usage to a provider holds that provider's row lock
 * while it reads the provider's usage, checks capacity and inserts, so
 * those steps of two writers on one provider never interleave; and under READ
 * COMMITTED each statement after the lock sees everything committed before
 * it, so capacity is checked against the real committed usage, never against
 * a stale snapshot. A claim that fits therefore succeeds even if another
 * claim committed first; a 409 means the capacity really is gone or the
 * consumer generation really is stale. Locks are taken consumers first (in
 * uuid order), then providers (in id order), then the inventory rows whose
 * stored usage (`inventories.used`, kept by triggers) the write changes (in
 * id order, all at once), so writers queue instead of deadlocking; a
 * deadlock that still happens (with a writer outside this module that locks
 * in another order) is retried whole by inTransaction.
 */
import { sql } from "drizzle-orm";
import type { Queryable, Tx } from "../db/database.js";
import { executePrepared } from "../db/prepared.js";
import { AllocationsNotFound, CapacityExceeded, ClassNotFound, ProviderNotFound, type ClassLookup } from "./errors.js";
import { getProviderByUuid, type ProviderRow } from "./providers.js";
import { writeTransaction, type Store } from "./store.js";
import { inventoryRowsToLock, type InventoryData } from "./inventories.js";
import { checkConsumerGeneration, deleteConsumersWithoutAllocations, lockConsumers, upsertConsumers } from "./consumers.js";
import { capacityOf, hasRoomFor, hasRoomForSql, unitsAllow, unitsAllowSql } from "./rules/capacity.js";

/** Amounts by resource class name. */
export type Resources = Record<string, number>;

/** One consumer's desired allocations, as every write API describes them. */
export interface ConsumerAllocations {
  consumerUuid: string;
  projectId: string;
  userId: string;
  /** The generation the writer saw: null for a new consumer; undefined below 1.28, where nothing is checked. */
  generation?: number | null;
  /** Set from 1.38; undefined keeps the stored type (NULL for a new consumer). */
  consumerType?: string;
  /** Provider uuid to resources. Empty removes all of the consumer's allocations. */
  allocations: Record<string, Resources>;
}

/** Which request writes the allocations: what an unknown resource class is reported against. */
export type AllocationWriter = Extract<ClassLookup, { in: "allocations" | "reshape" }>;

/** PUT /allocations/{consumer_uuid}: one consumer's allocations, in their own transaction. */
export async function setConsumerAllocations(store: Store, write: ConsumerAllocations): Promise<void> {
  await writeAllocationsTransaction(store, [write], { in: "allocations", consumer: write.consumerUuid });
}

/** POST /allocations: several consumers' allocations, all or nothing. */
export async function setAllocations(store: Store, writes: readonly ConsumerAllocations[]): Promise<void> {
  await writeAllocationsTransaction(store, writes, { in: "allocations" });
}

/**
 * Runs an allocation write in its own transaction, retried on deadlock or
 * serialization failure as configured; when the retries run out, a
 * ConcurrentUpdate.
 */
async function writeAllocationsTransaction(store: Store, writes: readonly ConsumerAllocations[], writer: AllocationWriter): Promise<void> {
  await writeTransaction(store, (tx) => replaceAllocations(tx, writes, writer), {
    retries: store.allocationRetries,
    during: "allocate",
  });
}

type ProviderLock = {
  id: number;
  uuid: string;
};

type InventoryUsage = InventoryData & { providerId: number; classId: number; used: number };

type Wanted = { consumerId: number; providerId: number; providerUuid: string; className: string; classId: number; used: number };

/** What the written consumers held before this write, per provider and class. */
type Released = { providerId: number; classId: number; used: number };

/**
 * Replaces the allocations of every consumer in `writes`, all or nothing,
 * inside the caller's transaction. Consumers whose allocations the write
 * removes are deleted. Throws GenerationConflict, ProviderNotFound, ClassNotFound (as
 * seen by `writer`) or CapacityExceeded.
 * A claim for a new consumer costs three statements (consumers; providers
 * and classes; capacity check and write) between BEGIN and COMMIT: round
 * trips, not SQL, are what a claim spends its time on.
 */
export async function replaceAllocations(tx: Tx, writes: readonly ConsumerAllocations[], writer: AllocationWriter): Promise<void> {
  if (writes.length === 0) return;

  // 1. Consumers: get or create, set their owners, and lock them, in one statement.
  const locked = await upsertConsumers(
    tx,
    writes.map((w) => ({ uuid: w.consumerUuid, project: w.projectId, user: w.userId, type: w.consumerType })),
  );
  // Generation checks in request order, so the first stale consumer is the one reported, as in Placement.
  const rows = writes.map((w) => {
    const row = locked.get(w.consumerUuid);
    if (!row) throw new Error(`consumer ${w.consumerUuid} neither locked nor created`);
    checkConsumerGeneration(w.consumerUuid, row.created ? null : row.generation, w.generation);
    return row;
  });

  // 2. Providers: those named in the request, plus those a consumer being
  // emptied holds allocations on (Placement counts those as written too);
  // and the resource classes, all resolved before any capacity check
  // (Placement's order), in the same round trip.
  const emptied = rows.filter((_, i) => Object.keys(writes[i].allocations).length === 0);
  const existing = rows.filter((r) => !r.created).map((r) => r.id);
  const requestedUuids = [...new Set(writes.flatMap((w) => Object.keys(w.allocations)))];
  const classNames = [...new Set(writes.flatMap((w) => Object.values(w.allocations).flatMap((r) => Object.keys(r))))];
  const { providers, classIds } = await lockProvidersAndResolveClasses(
    tx,
    requestedUuids,
    emptied.filter((r) => !r.created).map((r) => r.id),
    existing,
    classNames,
  );
  const providerByUuid = new Map(providers.map((p) => [p.uuid, p]));
  for (const uuid of requestedUuids) {
    if (!providerByUuid.has(uuid)) throw new ProviderNotFound(uuid, "allocate");
  }
  for (const name of classNames) if (!classIds.has(name)) throw new ClassNotFound(name, writer);

  // 3. Clean slate for these consumers (a consumer created just now has nothing to remove),
  // remembering what they held: a provider already over capacity may take back as much.
  const released: Array<Released & { consumerId: number }> = [];
  if (existing.length > 0) {
    const freed = await executePrepared<Released & { consumerId: number }>(
      tx,
      sql`DELETE FROM allocations WHERE consumer_id = ANY(${sql.param(existing)}::int[])
          RETURNING consumer_id AS "consumerId", resource_provider_id AS "providerId", resource_class_id AS "classId", used`,
      "pl_release_allocations",
    );
    released.push(...freed.rows);
  }
  // As in Placement, a write touches a consumer only through allocations: one asked to
  // hold nothing that holds nothing (a new one included) is kept as it is, neither bumped
  // nor deleted, so its generation and type outlive the write. The others are touched.
  const heldBefore = new Set(released.map((r) => r.consumerId));
  const touched = rows.filter((r, i) => Object.keys(writes[i].allocations).length > 0 || heldBefore.has(r.id));

  // 4. Check against what everyone else holds, as committed now, and write.
  const wanted: Wanted[] = [];
  writes.forEach((w, i) => {
    for (const [providerUuid, resources] of Object.entries(w.allocations)) {
      const providerId = providerByUuid.get(providerUuid)!.id;
      for (const [className, used] of Object.entries(resources)) {
        wanted.push({ consumerId: rows[i].id, providerId, providerUuid, className, classId: classIds.get(className)!, used });
      }
    }
  });
  await writeWithinCapacity(tx, wanted, released, classIds, providers, touched);
  const emptiedNow = emptied.filter((r) => heldBefore.has(r.id));
  if (emptiedNow.length > 0) await deleteConsumersWithoutAllocations(tx, emptiedNow.map((r) => r.id));
}

/**
 * Locks providers by uuid and by id together, in id order, and returns those
 * found, with the ids of the named resource classes (unknown names are
 * simply absent). When existing consumers are rewritten (their old
 * allocations deleted, then new ones inserted: two statements whose usage
 * triggers each lock inventory rows), also locks, after the providers, the
 * inventory rows of those providers and of the ones the rewritten consumers
 * hold allocations on, all at once in id order (see inventoryRowsToLock).
 * A claim for new consumers changes usage in one statement and skips this.
 */
async function lockProvidersAndResolveClasses(
  tx: Tx,
  uuids: string[],
  emptiedConsumerIds: number[],
  rewrittenConsumerIds: number[],
  classNames: string[],
): Promise<{ providers: ProviderLock[]; classIds: Map<string, number> }> {
  // UNION ALL runs its branches in order: the provider locks are all taken before the inventory locks.
  // The providers are found through a union of the two lookups rather than an OR of them: PostgreSQL
  // answers `uuid = ANY(...) OR id IN (subquery)` by reading every provider, and this by two index lookups.
  // The union is an array (computed once, before any lock) rather than an IN: a row this statement waited
  // for is checked again in its new version, and through the semi-join of an IN that check could drop it
  // (a provider another claim had just bumped came back "does not exist"); against an array it cannot.
  const inventoryLocks =
    rewrittenConsumerIds.length === 0
      ? sql``
      : sql`UNION ALL
    SELECT 'i', count(*)::int, '' FROM (${inventoryRowsToLock(sql`SELECT id FROM locked`, rewrittenConsumerIds)}) inventory_rows`;
  const res = await executePrepared<{ kind: "p" | "c" | "i"; id: number; name: string }>(tx, sql`
    WITH locked AS (
      SELECT id, uuid FROM resource_providers
      WHERE id = ANY(ARRAY(SELECT id FROM resource_providers WHERE uuid = ANY(${sql.param(uuids)}::text[])
                           UNION ALL
                           SELECT resource_provider_id FROM allocations WHERE consumer_id = ANY(${sql.param(emptiedConsumerIds)}::int[])))
      ORDER BY id FOR NO KEY UPDATE
    )
    SELECT 'p' AS kind, id, uuid AS name FROM locked
    UNION ALL
    SELECT 'c', id, name FROM resource_classes WHERE name = ANY(${sql.param(classNames)}::text[])
    ${inventoryLocks}`,
    "pl_lock_providers_resolve_classes",
  );
  return {
    providers: res.rows.filter((r) => r.kind === "p").map((r) => ({ id: r.id, uuid: r.name })),
    classIds: new Map(res.rows.filter((r) => r.kind === "c").map((r) => [r.name, r.id])),
  };
}

/**
 * One statement (a separate one from the lock, so its snapshot includes
 * everything committed before we got the locks): read the inventories and
 * their usage (`inventories.used`: the triggers keep it equal to the sum of
 * the allocations in every transaction that changes them, and each writer
 * that adds usage holds the provider lock, so the committed column is the
 * committed sum), and only if the capacity rule holds, insert the
 * allocations and bump the generations of the providers and consumers
 * written. The rule is evaluated twice: in SQL as the guard of the write,
 * and in checkCapacity on the rows read, which words the 409 and is the
 * authority (a disagreement between the two is a bug and fails loudly).
 * The caller holds the locks of `providers`; POST /claims (services/claims.ts)
 * takes them itself and calls this for each candidate it tries, since a
 * refusal writes nothing and leaves the transaction usable.
 */
export async function writeWithinCapacity(
  tx: Tx,
  wanted: readonly Wanted[],
  released: readonly Released[],
  classIds: Map<string, number>,
  providers: readonly ProviderLock[],
  consumers: ReadonlyArray<{ id: number }>,
): Promise<void> {
  const res = await executePrepared<InventoryUsage & { ok: boolean }>(tx, sql`
    WITH req AS (
      SELECT * FROM unnest(${sql.param(wanted.map((a) => a.consumerId))}::int[], ${sql.param(wanted.map((a) => a.providerId))}::int[],
                           ${sql.param(wanted.map((a) => a.classId))}::int[], ${sql.param(wanted.map((a) => a.used))}::bigint[])
             AS r(consumer_id, provider_id, class_id, used)
    ), rel AS (
      SELECT provider_id, class_id, SUM(used)::bigint AS used
      FROM unnest(${sql.param(released.map((r) => r.providerId))}::int[], ${sql.param(released.map((r) => r.classId))}::int[],
                  ${sql.param(released.map((r) => r.used))}::bigint[]) AS x(provider_id, class_id, used)
      GROUP BY provider_id, class_id
    ), inv AS (
      SELECT i.resource_provider_id, i.resource_class_id, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size, i.allocation_ratio,
             i.used
      FROM inventories i
      WHERE i.resource_provider_id IN (SELECT provider_id FROM req) AND i.resource_class_id = ANY(${sql.param([...classIds.values()])}::int[])
    ), verdict AS (
      SELECT NOT EXISTS (
               SELECT 1 FROM req r LEFT JOIN inv ON inv.resource_provider_id = r.provider_id AND inv.resource_class_id = r.class_id
               WHERE inv.resource_provider_id IS NULL OR NOT (${sql.raw(unitsAllowSql("inv", "r.used"))}))
         AND NOT EXISTS (
               SELECT 1 FROM (SELECT provider_id, class_id, SUM(used) AS asked FROM req GROUP BY provider_id, class_id) g
               JOIN inv ON inv.resource_provider_id = g.provider_id AND inv.resource_class_id = g.class_id
               LEFT JOIN rel ON rel.provider_id = g.provider_id AND rel.class_id = g.class_id
               WHERE NOT (${sql.raw(hasRoomForSql("inv", "g.asked"))})
                 AND g.asked > COALESCE(rel.used, 0)) AS ok
    ), inserted AS (
      INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
      -- Amounts arrive as bigint so an absurd one is refused by the rule, not by an integer overflow;
      -- what passes the rule is at most max_unit and fits the column.
      SELECT consumer_id, provider_id, class_id, used::int FROM req WHERE (SELECT ok FROM verdict)
    ), bumped_providers AS (
      UPDATE resource_providers SET generation = generation + 1, updated_at = now()
      WHERE id = ANY(${sql.param(providers.map((p) => p.id))}::int[]) AND (SELECT ok FROM verdict)
    ), bumped_consumers AS (
      UPDATE consumers SET generation = generation + 1, updated_at = now()
      WHERE id = ANY(${sql.param(consumers.map((c) => c.id))}::int[]) AND (SELECT ok FROM verdict)
    )
    SELECT v.ok, inv.resource_provider_id AS "providerId", inv.resource_class_id AS "classId", inv.total, inv.reserved,
           inv.min_unit AS "minUnit", inv.max_unit AS "maxUnit", inv.step_size AS "stepSize",
           inv.allocation_ratio AS "allocationRatio", inv.used
    FROM verdict v LEFT JOIN inv ON true`,
    "pl_write_allocations",
  );
  checkCapacity(wanted, released, classIds, res.rows.filter((r) => r.providerId !== null));
  if (!res.rows[0]?.ok) throw new Error("capacity check in SQL refused a write the capacity rule allows");
}

/**
 * Placement's capacity rule, with its messages: every provider needs
 * inventory of the class, each amount within min_unit..max_unit and a
 * multiple of step_size, and usage + the request's total per provider and
 * class within the capacity (rules/capacity.ts, which also writes the SQL guard).
 * As in Placement 14.0.0 (bug 2104040), a provider already over capacity
 * (reserved or the ratio was changed under its allocations) still takes a
 * write that does not raise its usage of the class: the same allocation
 * again, or a smaller one.
 */
function checkCapacity(wanted: readonly Wanted[], released: readonly Released[], classIds: Map<string, number>, rows: readonly InventoryUsage[]): void {
  if (wanted.length === 0) return;
  const held = new Map<string, number>();
  for (const r of released) held.set(`${r.providerId}:${r.classId}`, (held.get(`${r.providerId}:${r.classId}`) ?? 0) + r.used);
  const asked = new Map<string, number>();
  for (const a of wanted) asked.set(`${a.providerId}:${a.classId}`, (asked.get(`${a.providerId}:${a.classId}`) ?? 0) + a.used);
  const inventory = new Map(rows.map((r) => [`${r.providerId}:${r.classId}`, r]));
  const withoutAny = [...new Set(wanted.filter((a) => !rows.some((r) => r.providerId === a.providerId)).map((a) => a.providerUuid))];
  if (withoutAny.length > 0) {
    const classes = [...classIds.entries()].sort((a, b) => a[1] - b[1]).map(([name]) => name);
    throw new CapacityExceeded({ problem: "no inventory", classes, providers: withoutAny });
  }
  const requested = new Map<string, number>();
  for (const a of wanted) {
    const key = `${a.providerId}:${a.classId}`;
    requested.set(key, (requested.get(key) ?? 0) + a.used);
    const inv = inventory.get(key);
    if (!inv) throw new CapacityExceeded({ problem: "no inventory", classes: [a.className], providers: [a.providerUuid] });
    const room = { capacity: capacityOf(inv), used: inv.used, minUnit: inv.minUnit, maxUnit: inv.maxUnit, stepSize: inv.stepSize };
    if (!unitsAllow(room, a.used)) {
      throw new CapacityExceeded({ problem: "constraints", resourceClass: a.className, provider: a.providerUuid });
    }
    const raisesUsage = asked.get(key)! > (held.get(key) ?? 0);
    if (raisesUsage && (!hasRoomFor(room, a.used) || !hasRoomFor(room, requested.get(key)!))) {
      throw new CapacityExceeded({ problem: "capacity", resourceClass: a.className, provider: a.providerUuid });
    }
  }
}

/** One allocation row with what the GET handlers show about it. */
export type AllocationView = {
  providerUuid: string;
  providerGeneration: number;
  consumerUuid: string;
  consumerGeneration: number;
  className: string;
  used: number;
  createdAt: Date;
  updatedAt: Date | null;
}

export interface ConsumerAllocationsView {
  allocations: AllocationView[];
  projectId: string;
  userId: string;
  consumerGeneration: number;
  consumerType: string | null;
}

const VIEW_COLUMNS = sql`rp.uuid AS "providerUuid", rp.generation AS "providerGeneration", c.uuid AS "consumerUuid",
  c.generation AS "consumerGeneration", rc.name AS "className", a.used, a.created_at AS "createdAt", a.updated_at AS "updatedAt"`;

/** A consumer's allocations (in provider, class order), or undefined when it holds none. */
export async function getConsumerAllocations(q: Queryable, consumerUuid: string): Promise<ConsumerAllocationsView | undefined> {
  const res = await q.execute<AllocationView & { projectId: string; userId: string; consumerType: string | null }>(sql`
    SELECT ${VIEW_COLUMNS}, p.external_id AS "projectId", u.external_id AS "userId", ct.name AS "consumerType"
    FROM consumers c
    JOIN allocations a ON a.consumer_id = c.id
    JOIN resource_providers rp ON rp.id = a.resource_provider_id
    JOIN resource_classes rc ON rc.id = a.resource_class_id
    JOIN projects p ON p.id = c.project_id
    JOIN users u ON u.id = c.user_id
    LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
    WHERE c.uuid = ${consumerUuid}
    ORDER BY a.resource_provider_id, a.resource_class_id`);
  const first = res.rows[0];
  if (!first) return undefined;
  return {
    allocations: res.rows.map(withDates),
    projectId: first.projectId,
    userId: first.userId,
    consumerGeneration: first.consumerGeneration,
    consumerType: first.consumerType,
  };
}

/** GET /resource_providers/{uuid}/allocations: the provider and every allocation on it, in consumer, class order. */
export async function getProviderAllocations(
  q: Queryable,
  uuid: string,
): Promise<{ provider: ProviderRow; allocations: AllocationView[] }> {
  const provider = await getProviderByUuid(q, uuid, "list allocations");
  return { provider, allocations: await allocationsOnProvider(q, provider.id) };
}

async function allocationsOnProvider(q: Queryable, providerId: number): Promise<AllocationView[]> {
  const res = await q.execute<AllocationView>(sql`
    SELECT ${VIEW_COLUMNS}
    FROM allocations a
    JOIN consumers c ON c.id = a.consumer_id
    JOIN resource_providers rp ON rp.id = a.resource_provider_id
    JOIN resource_classes rc ON rc.id = a.resource_class_id
    WHERE a.resource_provider_id = ${providerId}
    ORDER BY a.consumer_id, a.resource_class_id`);
  return res.rows.map(withDates);
}

/** Raw queries through drizzle return timestamps as text. */
function withDates<T extends { createdAt: Date | string; updatedAt: Date | string | null }>(row: T): T {
  return { ...row, createdAt: new Date(row.createdAt), updatedAt: row.updatedAt === null ? null : new Date(row.updatedAt) };
}

/**
 * DELETE /allocations/{uuid}: removes the consumer and everything it holds,
 * under the consumer's row lock so it cannot interleave with a rewrite.
 * As in Placement, provider generations are not bumped (freeing usage
 * cannot overcommit anything). AllocationsNotFound when the consumer holds nothing.
 */
export async function deleteConsumerAllocations(store: Store, consumerUuid: string): Promise<void> {
  const deleted = await writeTransaction(
    store,
    async (tx) => {
      const consumer = (await lockConsumers(tx, [consumerUuid])).get(consumerUuid);
      if (!consumer) return false;
      const rows = await executePrepared(tx, sql`DELETE FROM allocations WHERE consumer_id = ${consumer.id}`, "pl_delete_consumer_allocations");
      // A consumer that held nothing (kept by a write of empty allocations) stays, as in Placement.
      if ((rows.rowCount ?? 0) === 0) return false;
      await deleteConsumersWithoutAllocations(tx, [consumer.id]);
      return true;
    },
    { retries: store.allocationRetries },
  );
  if (!deleted) throw new AllocationsNotFound(consumerUuid);
}
