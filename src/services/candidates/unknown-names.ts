/**
 * A candidates request that names a class or trait that does not exist.
 *
 * Placement resolves names lazily, as its search reaches them, and a search
 * that has already found nothing answers 200 with no candidates before it
 * reaches a later name. Its order (research_context.py):
 * 1. the root traits (root_required): an unknown one is a 400; no root with
 *    them means no candidates;
 * 2. then each group in the order its first parameter appears: its classes
 *    (unknown: 400); providers in its member_of aggregates (none: no
 *    candidates); its traits (unknown: 400); then its search (nothing: no
 *    candidates, and the later groups are never looked at).
 * So `resources=VCPU:1&member_of=<an empty aggregate>&resources1=NOPE:1` is
 * a 200 with nothing in it, and the same with a populated aggregate a 400.
 *
 * Only requests with an unknown name come here (namesKnown is the check on
 * every request); the groups before the first unknown name are then searched
 * one by one, which costs a few queries on a path no scheduler takes twice.
 */
import { sql } from "drizzle-orm";
import type { Queryable } from "../../db/database.js";
import type { CandidatesQuery, RequestGroup } from "../../query/request-groups.js";
import { ClassNotFound, TraitNotFound } from "../errors.js";
import type { IdsByName } from "./sql.js";

/** A group's trait names, required (any-of lists flattened) then forbidden: Placement's lookup order. */
export const groupTraits = (g: RequestGroup) => [...g.traits.required.flat(), ...g.traits.forbidden];

/** True when every class and trait the request names exists. */
export function namesKnown(query: CandidatesQuery, names: IdsByName): boolean {
  const { params, groups } = query;
  return (
    [...params.rootRequired, ...params.rootForbidden].every((t) => names.traits.has(t)) &&
    groups.every((g) => [...g.resources.keys()].every((rc) => names.resourceClasses.has(rc)) && groupTraits(g).every((t) => names.traits.has(t)))
  );
}

/** Whether a search for this one group alone (with the request-wide filters) finds any candidate. */
export type GroupSearch = (query: CandidatesQuery) => Promise<boolean>;

/**
 * For a request with an unknown name: throws the 400 Placement answers, or
 * returns (the answer is then no candidates) when Placement's search finds
 * nothing before it reaches the unknown name.
 */
export async function refuseUnknownName(tx: Queryable, query: CandidatesQuery, names: IdsByName, hasCandidates: GroupSearch): Promise<void> {
  const { params, groups } = query;
  for (const t of [...params.rootRequired, ...params.rootForbidden]) if (!names.traits.has(t)) throw new TraitNotFound([t], "query");
  if ((params.rootRequired.length > 0 || params.rootForbidden.length > 0) && !(await someRootHasTraits(tx, params.rootRequired, params.rootForbidden))) return;
  for (const g of groups) {
    for (const rc of g.resources.keys()) if (!names.resourceClasses.has(rc)) throw new ClassNotFound(rc, { in: "query" });
    if (g.aggregates.memberOf.length > 0 && !(await someProviderInAll(tx, g.aggregates.memberOf))) return;
    for (const t of groupTraits(g)) if (!names.traits.has(t)) throw new TraitNotFound([t], "query");
    if (!(await hasCandidates({ groups: [g], params: { ...params, limit: 1, sameSubtrees: [] } }))) return;
  }
}

async function someRootHasTraits(tx: Queryable, required: string[], forbidden: string[]): Promise<boolean> {
  const res = await tx.execute(sql`
    SELECT 1 FROM resource_providers rp
    WHERE rp.parent_provider_id IS NULL
      AND (SELECT count(DISTINCT t.id) FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
           WHERE rpt.resource_provider_id = rp.id AND t.name = ANY(${sql.param(required)}::varchar[])) = ${required.length}
      AND NOT EXISTS (SELECT 1 FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
           WHERE rpt.resource_provider_id = rp.id AND t.name = ANY(${sql.param(forbidden)}::varchar[]))
    LIMIT 1`);
  return res.rows.length > 0;
}

/** A provider in at least one aggregate of every list (Placement's provider_ids_matching_aggregates). */
async function someProviderInAll(tx: Queryable, memberOf: string[][]): Promise<boolean> {
  const conditions = memberOf.map(
    (anyOf) => sql`EXISTS (SELECT 1 FROM resource_provider_aggregates rpa JOIN aggregates a ON a.id = rpa.aggregate_id
                   WHERE rpa.resource_provider_id = rp.id AND a.uuid = ANY(${sql.param(anyOf)}::varchar[]))`,
  );
  const res = await tx.execute(sql`SELECT 1 FROM resource_providers rp WHERE ${sql.join(conditions, sql` AND `)} LIMIT 1`);
  return res.rows.length > 0;
}
