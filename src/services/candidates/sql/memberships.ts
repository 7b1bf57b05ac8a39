/**
 * Who has the traits and is in the aggregates a request names, which trees
 * sharing providers anchor into, and the roots of given providers: the
 * reads every batch of the general plan shares, one round trip each.
 * memberships reads resource_provider_traits_trait_id_idx and
 * resource_provider_aggregates_aggregate_id_idx for only the traits and
 * aggregates the request names.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Queryable } from "../../../db/database.js";
import { Words } from "./inventory-text.js";
import { NAME_ROW } from "./names.js";
import { namedRows } from "./statement.js";

/** Provider id to the subset of `traitIdList` it has and to the subset of `aggregateIdList` it is in, in one round trip. */
export async function memberships(
  tx: Queryable,
  traitIdList: number[],
  aggregateIdList: number[],
): Promise<{ traits: Map<number, Set<number>>; aggregates: Map<number, Set<number>> }> {
  const out = { traits: new Map<number, Set<number>>(), aggregates: new Map<number, Set<number>>() };
  if (traitIdList.length === 0 && aggregateIdList.length === 0) return out;
  const found = await namedRows<{ kind: string; rp: number; id: number }>(
    tx,
    "ac_memberships",
    sql`SELECT ${sql.raw(`'${NAME_ROW.trait}'`)} AS kind, resource_provider_id AS rp, trait_id AS id FROM resource_provider_traits
        WHERE trait_id = ANY(${sql.param(traitIdList)}::int[])
        UNION ALL
        SELECT ${sql.raw(`'${NAME_ROW.aggregate}'`)}, resource_provider_id, aggregate_id FROM resource_provider_aggregates
        WHERE aggregate_id = ANY(${sql.param(aggregateIdList)}::int[])`,
  );
  for (const r of found) addTo(r.kind === NAME_ROW.trait ? out.traits : out.aggregates, r.rp, r.id);
  return out;
}

/**
 * For sharing providers, the roots of every tree holding a provider that shares
 * an aggregate with them (their own root included when they are in an aggregate):
 * the trees they can "anchor" into.
 */
export async function sharingAnchors(tx: Queryable, sharingIds: number[]): Promise<Map<number, number[]>> {
  if (sharingIds.length === 0) return new Map();
  return anchorPairs(
    tx,
    "ac_sharing_anchors",
    sql`SELECT DISTINCT sa.resource_provider_id AS rp, other.root_provider_id AS anchor
        FROM resource_provider_aggregates sa
        JOIN resource_provider_aggregates oa ON oa.aggregate_id = sa.aggregate_id
        JOIN resource_providers other ON other.id = oa.resource_provider_id
        WHERE sa.resource_provider_id = ANY(${sql.param(sharingIds)}::int[])`,
  );
}

/**
 * sharingAnchors restricted to the trees rooted in `rootIds`: the anchors a
 * batch of trees needs, found from the batch's side (its providers, their
 * aggregates, the sharing providers among those aggregates' members), so
 * its cost follows the batch, where sharingAnchors's follows every tree the
 * sharing providers reach (over 100,000 nested trees with 2,000 sharing
 * providers, 100,000 pairs for a request with limit=1000 that reads a few
 * hundred trees). The range on the roots is for the planner, as
 * in tree-loads.ts; the sharing providers are joined as a list, which
 * PostgreSQL hashes, where `= ANY` compares each row with every element.
 */
export async function sharingAnchorsAmong(tx: Queryable, sharingIds: number[], rootIds: number[]): Promise<Map<number, number[]>> {
  if (sharingIds.length === 0 || rootIds.length === 0) return new Map();
  const lowest = rootIds.reduce((a, b) => Math.min(a, b));
  const highest = rootIds.reduce((a, b) => Math.max(a, b));
  return anchorPairs(
    tx,
    "ac_sharing_anchors_among",
    sql`SELECT DISTINCT sa.resource_provider_id AS rp, other.root_provider_id AS anchor
        FROM resource_providers other
        JOIN resource_provider_aggregates oa ON oa.resource_provider_id = other.id
        JOIN resource_provider_aggregates sa ON sa.aggregate_id = oa.aggregate_id
        JOIN unnest(${sql.param(sharingIds)}::int[]) AS sharing(id) ON sharing.id = sa.resource_provider_id
        WHERE other.root_provider_id BETWEEN ${lowest} AND ${highest}
          AND other.root_provider_id = ANY(${sql.param(rootIds)}::int[])`,
  );
}

/**
 * The distinct (rp, anchor) `pairs` as each sharing provider's anchors in id
 * order, read as one text of "rp anchor" pairs, not a row per pair: a
 * sharing provider in an aggregate of a hundred trees gives a hundred, and
 * the driver's parsing of rows cost more than the statement.
 */
async function anchorPairs(tx: Queryable, name: string, pairs: SQL): Promise<Map<number, number[]>> {
  const [found] = await namedRows<{ pairs: string | null }>(
    tx,
    name,
    sql`SELECT string_agg(rp || ' ' || anchor, ' ' ORDER BY rp, anchor) AS pairs FROM (${pairs}) pair`,
  );
  const out = new Map<number, number[]>();
  for (const r = new Words(found?.pairs); r.more(); ) {
    const rp = r.int();
    const anchor = r.int();
    const list = out.get(rp);
    if (list === undefined) out.set(rp, [anchor]);
    else list.push(anchor);
  }
  return out;
}

/** Provider id to root id for the given providers. */
export async function rootsOf(tx: Queryable, ids: number[]): Promise<Map<number, number>> {
  if (ids.length === 0) return new Map();
  const found = await namedRows<{ id: number; root: number }>(
    tx,
    "ac_roots_of",
    sql`SELECT id, root_provider_id AS root FROM resource_providers WHERE id = ANY(${sql.param(ids)}::int[]) ORDER BY id`,
  );
  return new Map(found.map((r) => [r.id, r.root]));
}

export function addTo(map: Map<number, Set<number>>, key: number, value: number): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(value);
}
