/**
 * The set-based reads of the candidates engine. Each function is one query
 * over whole sets of providers (never one query per provider), so a request
 * costs a handful of round trips whatever the number of providers.
 *
 * Plans on PostgreSQL 15/16 with the migration's indexes (checked with
 * EXPLAIN on the 10,000-node benchmark data):
 * - providersWithCapacity: hash join of `inventories` (seq scan, or the
 *   (resource_class_id, resource_provider_id) index when a class is rare) with
 *   a HashAggregate of `allocations` restricted to the requested classes
 *   (allocations_resource_class_id_idx), then the primary key of
 *   resource_providers; in_tree adds resource_providers_root_provider_id_idx.
 * - traitMembership / aggregateMembership: index scans of
 *   resource_provider_traits_trait_id_idx / resource_provider_aggregates_aggregate_id_idx
 *   for just the traits and aggregates the request names.
 * - loadTrees: resource_providers_root_provider_id_idx for the batch of roots,
 *   inventories by their unique (provider, class) index, and one index probe of
 *   allocations_provider_class_idx per inventory row for its usage (LATERAL),
 *   so a batch of 100 trees reads only those trees' rows.
 */
import { sql } from "drizzle-orm";
import type { Queryable } from "../../db/database.js";

async function rows<T>(tx: Queryable, query: ReturnType<typeof sql>): Promise<T[]> {
  const result = await tx.execute(query);
  return result.rows as T[];
}

export async function resourceClassIds(tx: Queryable, names: string[]): Promise<Map<string, number>> {
  if (names.length === 0) return new Map();
  const found = await rows<{ id: number; name: string }>(
    tx,
    sql`SELECT id, name FROM resource_classes WHERE name = ANY(${sql.param(names)}::varchar[])`,
  );
  return new Map(found.map((r) => [r.name, r.id]));
}

export async function traitIds(tx: Queryable, names: string[]): Promise<Map<string, number>> {
  if (names.length === 0) return new Map();
  const found = await rows<{ id: number; name: string }>(
    tx,
    sql`SELECT id, name FROM traits WHERE name = ANY(${sql.param(names)}::varchar[])`,
  );
  return new Map(found.map((r) => [r.name, r.id]));
}

export async function aggregateIds(tx: Queryable, uuids: string[]): Promise<Map<string, number>> {
  if (uuids.length === 0) return new Map();
  const found = await rows<{ id: number; uuid: string }>(
    tx,
    sql`SELECT id, uuid FROM aggregates WHERE uuid = ANY(${sql.param(uuids)}::varchar[])`,
  );
  return new Map(found.map((r) => [r.uuid, r.id]));
}

export interface CapacityRequest {
  resourceClassId: number;
  amount: number;
  /** Restrict to the tree with this root (in_tree). */
  treeRootId?: number;
}

/**
 * For each request, the providers (with their roots) whose inventory can
 * take `amount` more: free capacity, min_unit, max_unit and step_size, as
 * Placement checks them. Returns one [providerId, rootId] list per request.
 */
export async function providersWithCapacity(tx: Queryable, requests: CapacityRequest[]): Promise<Array<Array<[number, number]>>> {
  const out: Array<Array<[number, number]>> = requests.map(() => []);
  if (requests.length === 0) return out;
  const idx = requests.map((_, i) => i);
  const rcs = requests.map((r) => r.resourceClassId);
  const amounts = requests.map((r) => r.amount);
  const trees = requests.map((r) => r.treeRootId ?? null);
  const found = await rows<{ idx: number; id: number; root: number }>(
    tx,
    sql`WITH req AS (
          SELECT * FROM unnest(${sql.param(idx)}::int[], ${sql.param(rcs)}::int[], ${sql.param(amounts)}::int[], ${sql.param(trees)}::int[])
            AS r(idx, rc, amount, tree)
        ), usage AS (
          SELECT resource_provider_id, resource_class_id, sum(used) AS used
          FROM allocations WHERE resource_class_id = ANY(${sql.param(rcs)}::int[])
          GROUP BY resource_provider_id, resource_class_id
        )
        SELECT req.idx, rp.id, rp.root_provider_id AS root
        FROM req
        JOIN inventories inv ON inv.resource_class_id = req.rc
        JOIN resource_providers rp ON rp.id = inv.resource_provider_id
        LEFT JOIN usage u ON u.resource_provider_id = inv.resource_provider_id AND u.resource_class_id = inv.resource_class_id
        WHERE coalesce(u.used, 0) + req.amount <= (inv.total - inv.reserved) * inv.allocation_ratio
          AND inv.min_unit <= req.amount AND inv.max_unit >= req.amount AND req.amount % inv.step_size = 0
          AND (req.tree IS NULL OR rp.root_provider_id = req.tree)
        ORDER BY req.idx, rp.id`,
  );
  for (const r of found) out[r.idx].push([r.id, r.root]);
  return out;
}

/** Provider id to the subset of `ids` (trait ids) it has. */
export async function traitMembership(tx: Queryable, ids: number[]): Promise<Map<number, Set<number>>> {
  const out = new Map<number, Set<number>>();
  if (ids.length === 0) return out;
  const found = await rows<{ rp: number; t: number }>(
    tx,
    sql`SELECT resource_provider_id AS rp, trait_id AS t FROM resource_provider_traits WHERE trait_id = ANY(${sql.param(ids)}::int[])`,
  );
  for (const r of found) addTo(out, r.rp, r.t);
  return out;
}

/** Provider id to the subset of `ids` (aggregate ids) it is a member of. */
export async function aggregateMembership(tx: Queryable, ids: number[]): Promise<Map<number, Set<number>>> {
  const out = new Map<number, Set<number>>();
  if (ids.length === 0) return out;
  const found = await rows<{ rp: number; a: number }>(
    tx,
    sql`SELECT resource_provider_id AS rp, aggregate_id AS a FROM resource_provider_aggregates WHERE aggregate_id = ANY(${sql.param(ids)}::int[])`,
  );
  for (const r of found) addTo(out, r.rp, r.a);
  return out;
}

/**
 * For sharing providers, the roots of every tree holding a provider that shares
 * an aggregate with them (their own root included when they are in an aggregate):
 * the trees they can "anchor" into.
 */
export async function sharingAnchors(tx: Queryable, sharingIds: number[]): Promise<Map<number, number[]>> {
  const out = new Map<number, number[]>();
  if (sharingIds.length === 0) return out;
  const found = await rows<{ rp: number; anchor: number }>(
    tx,
    sql`SELECT DISTINCT sa.resource_provider_id AS rp, other.root_provider_id AS anchor
        FROM resource_provider_aggregates sa
        JOIN resource_provider_aggregates oa ON oa.aggregate_id = sa.aggregate_id
        JOIN resource_providers other ON other.id = oa.resource_provider_id
        WHERE sa.resource_provider_id = ANY(${sql.param(sharingIds)}::int[])
        ORDER BY 1, 2`,
  );
  for (const r of found) {
    const list = out.get(r.rp) ?? [];
    list.push(r.anchor);
    out.set(r.rp, list);
  }
  return out;
}

/** Provider id to root id for the given providers. */
export async function rootsOf(tx: Queryable, ids: number[]): Promise<Map<number, number>> {
  if (ids.length === 0) return new Map();
  const found = await rows<{ id: number; root: number }>(
    tx,
    sql`SELECT id, root_provider_id AS root FROM resource_providers WHERE id = ANY(${sql.param(ids)}::int[]) ORDER BY id`,
  );
  return new Map(found.map((r) => [r.id, r.root]));
}

/** Whether any provider has a parent: without trees simpler paths apply. */
export async function hasTrees(tx: Queryable): Promise<boolean> {
  const found = await rows(tx, sql`SELECT 1 FROM resource_providers WHERE parent_provider_id IS NOT NULL LIMIT 1`);
  return found.length > 0;
}

export async function providerByUuid(tx: Queryable, uuid: string): Promise<{ id: number; rootId: number } | undefined> {
  const found = await rows<{ id: number; root: number }>(
    tx,
    sql`SELECT id, root_provider_id AS root FROM resource_providers WHERE uuid = ${uuid}`,
  );
  return found[0] ? { id: found[0].id, rootId: found[0].root } : undefined;
}

export interface TreeProvider {
  id: number;
  uuid: string;
  parentId: number | null;
  rootId: number;
}

export interface TreeInventory {
  providerId: number;
  resourceClassId: number;
  resourceClass: string;
  capacity: number;
  used: number;
  maxUnit: number;
}

export interface TreeData {
  providers: TreeProvider[];
  inventories: TreeInventory[];
  /** Provider id to its trait names, in trait id order. */
  traits: Map<number, string[]>;
}

/** Everything about the trees under `rootIds` that summaries and the final capacity check need. */
export async function loadTrees(tx: Queryable, rootIds: number[]): Promise<TreeData> {
  const roots = sql.param(rootIds);
  const providers = await rows<{ id: number; uuid: string; parent: number | null; root: number }>(
    tx,
    sql`SELECT id, uuid, parent_provider_id AS parent, root_provider_id AS root
        FROM resource_providers WHERE root_provider_id = ANY(${roots}::int[]) ORDER BY id`,
  );
  const inventories = await rows<{ rp: number; rc: number; rc_name: string; total: number; reserved: number; ratio: number; max_unit: number; used: number }>(
    tx,
    sql`SELECT inv.resource_provider_id AS rp, inv.resource_class_id AS rc, rc.name AS rc_name, inv.total, inv.reserved,
               inv.allocation_ratio AS ratio, inv.max_unit, coalesce(u.used, 0) AS used
        FROM resource_providers rp
        JOIN inventories inv ON inv.resource_provider_id = rp.id
        JOIN resource_classes rc ON rc.id = inv.resource_class_id
        LEFT JOIN LATERAL (
          SELECT sum(a.used) AS used FROM allocations a
          WHERE a.resource_provider_id = inv.resource_provider_id AND a.resource_class_id = inv.resource_class_id
        ) u ON true
        WHERE rp.root_provider_id = ANY(${roots}::int[])
        ORDER BY inv.resource_provider_id, inv.resource_class_id`,
  );
  const traitRows = await rows<{ rp: number; name: string }>(
    tx,
    sql`SELECT rpt.resource_provider_id AS rp, t.name
        FROM resource_providers rp
        JOIN resource_provider_traits rpt ON rpt.resource_provider_id = rp.id
        JOIN traits t ON t.id = rpt.trait_id
        WHERE rp.root_provider_id = ANY(${roots}::int[])
        ORDER BY rpt.resource_provider_id, t.id`,
  );
  const traits = new Map<number, string[]>();
  for (const r of traitRows) {
    const list = traits.get(r.rp) ?? [];
    list.push(r.name);
    traits.set(r.rp, list);
  }
  return {
    providers: providers.map((p) => ({ id: p.id, uuid: p.uuid, parentId: p.parent, rootId: p.root })),
    inventories: inventories.map((i) => ({
      providerId: i.rp,
      resourceClassId: i.rc,
      resourceClass: i.rc_name,
      // Placement's capacity: int((total - reserved) * allocation_ratio).
      capacity: Math.floor((i.total - i.reserved) * i.ratio),
      used: Number(i.used),
      maxUnit: i.max_unit,
    })),
    traits,
  };
}

function addTo(map: Map<number, Set<number>>, key: number, value: number): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}
