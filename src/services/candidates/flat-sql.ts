/**
 * The flat fast path in one statement: name lookup, the "is this deployment
 * flat?" check, the filter and everything the response shows about each
 * matching provider, in a single round trip with no transaction around it (one
 * statement is one snapshot). It runs as a named (prepared) statement, so
 * PostgreSQL plans each request shape once per connection.
 *
 * Why it is fast (1,000 flat compute nodes, 2 cores, PostgreSQL 15; before:
 * lookup, filter and loadTrees in a transaction, 5 round trips, ~11 ms of
 * SQL; now one round trip of ~5 ms):
 * - Capacity is one aggregation over `inventories` walked in provider order
 *   (inventories_provider_class_unique), stopping at the LIMIT, instead of a
 *   correlated count per provider (which rebuilt a hash per provider: 5 us
 *   each). The HAVING count is `>=`, not `=`, on purpose: PostgreSQL's default
 *   selectivity for `>=` makes it expect many matches, so it keeps the ordered
 *   walk (3 ms at 10,000 providers with LIMIT 1000, where `=` sorts everything:
 *   18 ms). It can be `>=` because each class is counted at most once.
 * - Usage is one GROUP BY of `allocations` joined to the inventory rows, not a
 *   correlated sum per inventory row: with 60,000 allocation rows over 1,000
 *   providers the correlated sums took 31 ms, the join 12 ms (and with none,
 *   1.5 ms less). Its cost grows with the allocations of every provider that
 *   passes the trait, aggregate and in_tree filters, which the GROUP BY
 *   applies too (same parameters): member_of picking 50 of those 1,000
 *   providers, 11 -> 5 ms; required + forbidden traits, 13.5 -> 10.4 ms.
 * - The same pass writes each provider's summary resources as one compact
 *   string ("0 512 0 2 2000 0": class id, capacity, used), so no
 *   inventory rows travel; the route turns it into JSON (PostgreSQL building
 *   the JSON itself cost 0.7 ms more per 3,000 inventories than Node does).
 *   Traits likewise, space-separated in id order (json_agg: 0.2 ms more).
 * - Several groups asking for one class on the one provider are checked as
 *   Placement's merge does, in the same pass: per class the smallest amount
 *   against min_unit, their sum against max_unit and capacity, and their gcd
 *   against step_size (each amount is a multiple of step_size iff the gcd is).
 * - Each inventory row finds its class's requested amounts by array_position
 *   in the parameter arrays rather than by joining a table of requests (a
 *   generic plan nested-loops that join: 5.8 -> 5.0 ms), and no row joins
 *   resource_classes: the requested ids are one InitPlan, and every class's
 *   name comes back once in the 'c' rows (0.6 ms less).
 * - Named statement: after five runs PostgreSQL keeps a generic plan and
 *   skips the ~2 ms of planning. Except with member_of: a generic plan walks
 *   every inventory and aggregates usage before the aggregate filter, where
 *   a plan for the actual aggregate starts from its few members (10,000
 *   nodes, 600,000 allocation rows, member_of of 500: 103 ms generic, 41 ms
 *   planned each time; 1,000 nodes without allocations: 1.4 vs 2.0 ms).
 *   The generic plan (EXPLAIN ANALYZE, plain request, LIMIT 1000):
 *     Append
 *       -> CTE Scan on names        (names, 'n' and 's' by index, once)
 *       -> Merge Left Join (traits per provider)
 *            -> Sort -> Hash Join (resource_providers for the uuid)
 *                 -> Limit -> GroupAggregate (Group Key: inv.resource_provider_id)
 *                      One-Time Filter: NOT (some provider has a parent or shares)
 *                      -> Merge Left Join (usage: GroupAggregate of allocations)
 *                           -> Index Scan using inventories_provider_class_unique
 *            -> GroupAggregate -> Hash Join resource_provider_traits, traits
 *   Trait and aggregate filters are semi/anti-joins under the GroupAggregate,
 *   so filtered-out providers are never rendered.
 * Rows: `k` 'c' (every resource class), 't'/'a' (a name asked for and its
 * id), 'n' (some provider has a parent), 's' (some provider shares), 'r' (an
 * in_tree provider and its root), 'x' (a candidate: id, uuid, summary
 * resources, traits).
 */
import { createHash } from "node:crypto";
import type pg from "pg";
import type { Db } from "../../db/database.js";
import type { CandidatesQuery, RequestGroup } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import type { NameLookup } from "./sql.js";

export const SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE";

export interface FlatAnchor {
  uuid: string;
  /** Summary resources as "classId capacity used classId capacity used ..."; empty when none shown. */
  resources: string;
  /** Trait names in id order, space-separated (trait names are [A-Z0-9_]+). */
  traits: string;
}

export interface FlatAnswer {
  names: NameLookup;
  /** In_tree uuid to its root id. */
  inTree: Map<string, number>;
  anchors: FlatAnchor[];
  /** Every resource class id to its name (the summaries name classes nobody asked for). */
  classNames: Map<number, string>;
}

/** Whether the one-statement path can answer this request (otherwise the general engine does). */
export function flatEligible(query: CandidatesQuery, randomize: boolean): boolean {
  const { groups, params } = query;
  if (randomize) return false;
  // Resourceless groups, and two granular groups under isolate, are rare: the engine handles them.
  if (groups.some((g) => g.resources.size === 0)) return false;
  return !(params.groupPolicy === "isolate" && groups.filter((g) => g.useSameProvider).length > 1);
}

/** Per requested class: smallest amount, sum, gcd (see the header). */
function classRequests(groups: RequestGroup[]): Map<string, { lo: number; total: number; g: number }> {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const out = new Map<string, { lo: number; total: number; g: number }>();
  for (const g of groups) {
    for (const [rc, amount] of g.resources) {
      const r = out.get(rc);
      if (!r) out.set(rc, { lo: amount, total: amount, g: amount });
      else out.set(rc, { lo: Math.min(r.lo, amount), total: r.total + amount, g: gcd(r.g, amount) });
    }
  }
  return out;
}

/**
 * drizzle's handle made by drizzle(pool) carries the pool as `$client` (its
 * Db type does not say so); named statements and array rows need pg itself.
 */
function poolOf(db: Db): pg.Pool {
  const pool = (db as unknown as { $client?: pg.Pool }).$client;
  if (!pool?.query) throw new Error("the database handle has no pg pool");
  return pool;
}

export async function flatCandidates(db: Db, query: CandidatesQuery, allClasses: boolean, limit: number | undefined): Promise<FlatAnswer> {
  const { groups, params } = query;
  const values: unknown[] = [];
  const p = (v: unknown) => `$${values.push(v)}`;
  const ids = (kind: "t" | "a", names: Iterable<string>) => `ARRAY(SELECT id FROM names WHERE k = '${kind}' AND s = ANY(${p([...names])}::text[]))`;
  const ID = "inv.resource_provider_id";
  const has = (table: "resource_provider_traits" | "resource_provider_aggregates", column: string, list: string) =>
    `EXISTS (SELECT 1 FROM ${table} m WHERE m.resource_provider_id = ${ID} AND m.${column} = ANY(${list}))`;

  const traitNames = unique([...params.rootRequired, ...params.rootForbidden, ...groups.flatMap((g) => [...g.traits.required.flat(), ...g.traits.forbidden]), SHARING_TRAIT]);
  const aggUuids = unique(groups.flatMap((g) => [...g.aggregates.memberOf.flat(), ...g.aggregates.forbidden]));
  const inTreeUuids = unique(groups.flatMap((g) => (g.inTree ? [g.inTree] : [])));
  const requests = classRequests(groups);

  const conditions: string[] = [];
  const traitFilter = (required: string[][], forbidden: Iterable<string>) => {
    for (const anyOf of required) conditions.push(has("resource_provider_traits", "trait_id", ids("t", anyOf)));
    const f = [...forbidden];
    if (f.length > 0) conditions.push(`NOT ${has("resource_provider_traits", "trait_id", ids("t", f))}`);
  };
  for (const g of groups) {
    traitFilter(g.traits.required, g.traits.forbidden);
    for (const anyOf of g.aggregates.memberOf) conditions.push(has("resource_provider_aggregates", "aggregate_id", ids("a", anyOf)));
    if (g.aggregates.forbidden.size > 0) conditions.push(`NOT ${has("resource_provider_aggregates", "aggregate_id", ids("a", g.aggregates.forbidden))}`);
    // A flat provider is its own root.
    if (g.inTree) conditions.push(`${ID} = (SELECT id FROM names WHERE k = 'r' AND s = ${p(g.inTree)}::text)`);
  }
  traitFilter(params.rootRequired.map((t) => [t]), params.rootForbidden);

  // The names' parameters come first so the text reads in order; the rest were pushed above.
  const head = [p(traitNames), p(aggUuids), p(inTreeUuids)];
  const req = [p([...requests.keys()]), p([...requests.values()].map((r) => r.lo)), p([...requests.values()].map((r) => r.total)), p([...requests.values()].map((r) => r.g))];
  const text = `WITH names AS MATERIALIZED (
      SELECT 'c' AS k, id, name::text AS s FROM resource_classes
      UNION ALL SELECT 't', id, name::text FROM traits WHERE name = ANY(${head[0]}::varchar[])
      UNION ALL SELECT 'a', id, uuid::text FROM aggregates WHERE uuid = ANY(${head[1]}::varchar[])
      UNION ALL (SELECT 'n', id, '' FROM resource_providers WHERE parent_provider_id IS NOT NULL LIMIT 1)
      UNION ALL (SELECT 's', rpt.resource_provider_id, '' FROM resource_provider_traits rpt
                 WHERE rpt.trait_id = (SELECT id FROM traits WHERE name = '${SHARING_TRAIT}') LIMIT 1)
      UNION ALL SELECT 'r', root_provider_id, uuid::text FROM resource_providers WHERE uuid = ANY(${head[2]}::varchar[])
    ), anchor AS (
      SELECT ${ID} AS id,
             string_agg(inv.resource_class_id || ' ' || floor((inv.total - inv.reserved) * inv.allocation_ratio)::bigint || ' ' || u.used, ' ')
               FILTER (WHERE ${p(allClasses)}::boolean OR r.i IS NOT NULL) AS res
      FROM inventories inv
      CROSS JOIN LATERAL (SELECT array_position(ARRAY(SELECT rc.id FROM unnest(${req[0]}::text[]) WITH ORDINALITY AS x(name, i)
                                                      JOIN resource_classes rc ON rc.name = x.name ORDER BY x.i),
                                                inv.resource_class_id) AS i) r
      LEFT JOIN (SELECT a.resource_provider_id AS rp, a.resource_class_id AS rc, sum(a.used) AS used FROM allocations a
                 ${conditions.length > 0 ? `WHERE ${conditions.map((c) => c.replaceAll(ID, "a.resource_provider_id")).join(" AND ")}` : ""}
                 GROUP BY 1, 2) u0
        ON u0.rp = inv.resource_provider_id AND u0.rc = inv.resource_class_id
      CROSS JOIN LATERAL (SELECT coalesce(u0.used, 0) AS used) u
      WHERE NOT EXISTS (SELECT 1 FROM names WHERE k IN ('n', 's'))
        ${conditions.map((c) => `AND ${c}`).join("\n        ")}
      GROUP BY ${ID}
      HAVING count(*) FILTER (WHERE inv.min_unit <= (${req[1]}::int[])[r.i] AND inv.max_unit >= (${req[2]}::int[])[r.i]
                                AND (${req[3]}::int[])[r.i] % inv.step_size = 0
                                AND u.used + (${req[2]}::int[])[r.i] <= (inv.total - inv.reserved) * inv.allocation_ratio) >= ${p(requests.size)}::int
      ORDER BY ${ID} LIMIT ${p(limit ?? null)}::bigint
    )
    SELECT k, id, s, NULL AS res, NULL AS traits FROM names
    UNION ALL
    (SELECT 'x', a.id, rp.uuid::text, a.res, tr.names
     FROM anchor a JOIN resource_providers rp ON rp.id = a.id
     LEFT JOIN (SELECT rpt.resource_provider_id AS id, string_agg(t.name, ' ' ORDER BY t.id) AS names
                FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id GROUP BY 1) tr ON tr.id = a.id
     ORDER BY a.id)`;
  // One prepared statement per request shape and connection; the name is the text's hash. Not with
  // member_of: how many providers an aggregate holds decides the plan, which a generic plan cannot know.
  const generic = groups.every((g) => g.aggregates.memberOf.length === 0);
  const name = generic ? `ac_flat_${createHash("sha1").update(text).digest("hex").slice(0, 16)}` : undefined;
  const result = await poolOf(db).query<unknown[]>({ name, text, values, rowMode: "array" });

  const names: NameLookup = { resourceClasses: new Map(), traits: new Map(), aggregates: new Map(), hasTrees: false, hasSharing: false };
  const inTree = new Map<string, number>();
  const classNames = new Map<number, string>();
  const anchors: FlatAnchor[] = [];
  for (const row of result.rows) {
    const k = row[0] as string;
    if (k === "x") anchors.push({ uuid: row[2] as string, resources: (row[3] as string | null) ?? "", traits: (row[4] as string | null) ?? "" });
    else if (k === "c") {
      names.resourceClasses.set(row[2] as string, row[1] as number);
      classNames.set(row[1] as number, row[2] as string);
    }
    else if (k === "t") names.traits.set(row[2] as string, row[1] as number);
    else if (k === "a") names.aggregates.set(row[2] as string, row[1] as number);
    else if (k === "r") inTree.set(row[2] as string, row[1] as number);
    else if (k === "n") names.hasTrees = true;
    else names.hasSharing = true;
  }
  // An unknown in_tree provider means no candidates at all, whichever group names it.
  if (inTreeUuids.some((u) => !inTree.has(u))) anchors.length = 0;
  return { names, inTree, anchors, classNames };
}
