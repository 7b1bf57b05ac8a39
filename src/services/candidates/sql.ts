/**
 * The set-based reads of the candidates engine. Each function is one query
 * over whole sets of providers (never one query per provider), so a request
 * costs a handful of round trips whatever the number of providers:
 * lookupNames, memberships, providersWithCapacity, (sharingAnchors,
 * providerByUuid, rootsOf when needed) and one loadTrees per batch of trees.
 * (Without trees and sharing providers flat.ts replaces the middle ones with
 * a single filter; see conditions.ts.)
 *
 * Plans on PostgreSQL 15 with the migration's indexes (EXPLAIN ANALYZE on the
 * benchmark data, 1,000 compute nodes, nested variant: 5,020 providers):
 * - lookupNames: four index scans (resource_classes_name_key, traits_name_key,
 *   aggregates_uuid_key) and resource_providers_parent_provider_id_idx with
 *   LIMIT 1; under 1 ms.
 * - memberships: index scans of resource_provider_traits_trait_id_idx and
 *   resource_provider_aggregates_aggregate_id_idx for only the traits and
 *   aggregates the request names.
 * - providersWithCapacity: hash join of the few (class, amount) rows with
 *   `inventories` (seq scan; inventories_resource_class_id_idx when a class is
 *   rare), then resource_providers by primary key for the root; about 11 ms
 *   for 8,000 matching inventory rows. in_tree adds
 *   resource_providers_root_provider_id_idx.
 * - loadTrees: bitmap scan of resource_providers_root_provider_id_idx for the
 *   batch of roots, then hash or index joins to inventories
 *   (inventories_provider_class_unique) and resource_provider_traits (primary
 *   key); about 5 ms for 1,000 trees.
 * Usage is `inventories.used`, which triggers keep equal to the sum of the
 * allocations (migration inventory_usage_triggers): neither read touches
 * `allocations`, so their cost does not grow with the number of allocations.
 */
import { sql } from "drizzle-orm";
import type { Queryable } from "../../db/database.js";

async function rows<T>(tx: Queryable, query: ReturnType<typeof sql>): Promise<T[]> {
  const result = await tx.execute(query);
  return result.rows as T[];
}

export interface NameLookup {
  resourceClasses: Map<string, number>;
  traits: Map<string, number>;
  aggregates: Map<string, number>;
  /** Whether some provider has a parent: without trees simpler paths apply. */
  hasTrees: boolean;
  /** Whether some provider shares its inventory through aggregates (has MISC_SHARES_VIA_AGGREGATE). */
  hasSharing: boolean;
}

/** Ids of the named classes, traits and aggregates (absent when unknown), and whether trees exist, in one round trip. */
export async function lookupNames(tx: Queryable, classes: string[], traitNames: string[], aggregateUuids: string[]): Promise<NameLookup> {
  const found = await rows<{ kind: string; id: number; name: string }>(
    tx,
    sql`SELECT 'c' AS kind, id, name FROM resource_classes WHERE name = ANY(${sql.param(classes)}::varchar[])
        UNION ALL SELECT 't', id, name FROM traits WHERE name = ANY(${sql.param(traitNames)}::varchar[])
        UNION ALL SELECT 'a', id, uuid FROM aggregates WHERE uuid = ANY(${sql.param(aggregateUuids)}::varchar[])
        UNION ALL (SELECT 'n', id, '' FROM resource_providers WHERE parent_provider_id IS NOT NULL LIMIT 1)
        UNION ALL (SELECT 's', rpt.resource_provider_id, '' FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
                   WHERE t.name = 'MISC_SHARES_VIA_AGGREGATE' LIMIT 1)`,
  );
  const out: NameLookup = { resourceClasses: new Map(), traits: new Map(), aggregates: new Map(), hasTrees: false, hasSharing: false };
  for (const r of found) {
    if (r.kind === "c") out.resourceClasses.set(r.name, r.id);
    else if (r.kind === "t") out.traits.set(r.name, r.id);
    else if (r.kind === "a") out.aggregates.set(r.name, r.id);
    else if (r.kind === "n") out.hasTrees = true;
    else out.hasSharing = true;
  }
  return out;
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
/**
 * Which trees to look in: providers under `roots`, plus the providers `plus`
 * (sharing providers, which anchor into other trees), for batches of trees.
 */
export interface CapacityScope {
  roots: number[];
  plus: number[];
}

export async function providersWithCapacity(
  tx: Queryable,
  requests: CapacityRequest[],
  scope?: CapacityScope,
): Promise<Array<Array<[number, number]>>> {
  const out: Array<Array<[number, number]>> = requests.map(() => []);
  if (requests.length === 0) return out;
  const inScope = scope
    ? sql`AND (rp.root_provider_id = ANY(${sql.param(scope.roots)}::int[]) OR rp.id = ANY(${sql.param(scope.plus)}::int[]))`
    : sql``;
  const idx = requests.map((_, i) => i);
  const rcs = requests.map((r) => r.resourceClassId);
  const amounts = requests.map((r) => r.amount);
  const trees = requests.map((r) => r.treeRootId ?? null);
  const found = await rows<{ idx: number; id: number; root: number }>(
    tx,
    sql`WITH req AS (
          SELECT * FROM unnest(${sql.param(idx)}::int[], ${sql.param(rcs)}::int[], ${sql.param(amounts)}::int[], ${sql.param(trees)}::int[])
            AS r(idx, rc, amount, tree)
        )
        SELECT req.idx, rp.id, rp.root_provider_id AS root
        FROM req
        JOIN inventories inv ON inv.resource_class_id = req.rc
        JOIN resource_providers rp ON rp.id = inv.resource_provider_id
        WHERE inv.used + req.amount <= (inv.total - inv.reserved) * inv.allocation_ratio
          AND inv.min_unit <= req.amount AND inv.max_unit >= req.amount AND req.amount % inv.step_size = 0
          AND (req.tree IS NULL OR rp.root_provider_id = req.tree)
          ${inScope}
        ORDER BY req.idx, rp.id`,
  );
  for (const r of found) out[r.idx].push([r.id, r.root]);
  return out;
}

/** Provider id to the subset of `traitIdList` it has and to the subset of `aggregateIdList` it is in, in one round trip. */
export async function memberships(
  tx: Queryable,
  traitIdList: number[],
  aggregateIdList: number[],
): Promise<{ traits: Map<number, Set<number>>; aggregates: Map<number, Set<number>> }> {
  const out = { traits: new Map<number, Set<number>>(), aggregates: new Map<number, Set<number>>() };
  if (traitIdList.length === 0 && aggregateIdList.length === 0) return out;
  const found = await rows<{ kind: string; rp: number; id: number }>(
    tx,
    sql`SELECT 't' AS kind, resource_provider_id AS rp, trait_id AS id FROM resource_provider_traits
        WHERE trait_id = ANY(${sql.param(traitIdList)}::int[])
        UNION ALL
        SELECT 'a', resource_provider_id, aggregate_id FROM resource_provider_aggregates
        WHERE aggregate_id = ANY(${sql.param(aggregateIdList)}::int[])`,
  );
  for (const r of found) addTo(r.kind === "t" ? out.traits : out.aggregates, r.rp, r.id);
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

/** The next `count` root providers after `afterId`, in id order. */
export async function nextRoots(tx: Queryable, afterId: number, count: number): Promise<number[]> {
  const found = await rows<{ id: number }>(
    tx,
    sql`SELECT id FROM resource_providers WHERE parent_provider_id IS NULL AND id > ${afterId} ORDER BY id LIMIT ${count}`,
  );
  return found.map((r) => r.id);
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

/**
 * Everything about the trees under `rootIds` that summaries and the final
 * capacity check need, in one round trip of set-based joins (correlated
 * per-provider subqueries measured three times slower): providers,
 * inventories with their usage, and traits as rows of one UNION ALL, told apart by `k`.
 */
export async function loadTrees(tx: Queryable, rootIds: number[]): Promise<TreeData> {
  const found = await rows<{ k: string; rp: number; i1: number | null; i2: number | null; i3: number | null; i4: number | null; i5: number | null; f: number | null; s: string | null }>(
    tx,
    sql`WITH p AS (
          SELECT id, uuid, parent_provider_id, root_provider_id FROM resource_providers
          WHERE root_provider_id = ANY(${sql.param(rootIds)}::int[])
        )
        SELECT 'p' AS k, p.id AS rp, p.parent_provider_id AS i1, p.root_provider_id AS i2, NULL::int AS i3, NULL::int AS i4,
               NULL::bigint AS i5, NULL::float8 AS f, p.uuid::text AS s
        FROM p
        UNION ALL
        SELECT 'i', inv.resource_provider_id, inv.resource_class_id, inv.total, inv.reserved, inv.max_unit, inv.used,
               inv.allocation_ratio, rc.name::text
        FROM p JOIN inventories inv ON inv.resource_provider_id = p.id JOIN resource_classes rc ON rc.id = inv.resource_class_id
        UNION ALL
        SELECT 't', rpt.resource_provider_id, t.id, NULL, NULL, NULL, NULL, NULL, t.name::text
        FROM p JOIN resource_provider_traits rpt ON rpt.resource_provider_id = p.id JOIN traits t ON t.id = rpt.trait_id`,
  );
  const data: TreeData = { providers: [], inventories: [], traits: new Map() };
  const traitRows: Array<{ rp: number; id: number; name: string }> = [];
  for (const r of found) {
    if (r.k === "p") data.providers.push({ id: r.rp, uuid: r.s!, parentId: r.i1, rootId: r.i2! });
    else if (r.k === "t") traitRows.push({ rp: r.rp, id: r.i1!, name: r.s! });
    else {
      data.inventories.push({
        providerId: r.rp,
        resourceClassId: r.i1!,
        resourceClass: r.s!,
        // Placement's capacity: int((total - reserved) * allocation_ratio).
        capacity: Math.floor((r.i2! - r.i3!) * r.f!),
        used: r.i5!,
        maxUnit: r.i4!,
      });
    }
  }
  data.providers.sort((a, b) => a.id - b.id);
  // Traits in trait id (creation) order, as Placement lists them.
  traitRows.sort((a, b) => a.rp - b.rp || a.id - b.id);
  for (const t of traitRows) {
    const list = data.traits.get(t.rp);
    if (list) list.push(t.name);
    else data.traits.set(t.rp, [t.name]);
  }
  return data;
}

function addTo(map: Map<number, Set<number>>, key: number, value: number): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}
