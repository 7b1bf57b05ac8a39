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
 * The trait and aggregate conditions are the rules' own (rules/memberships.ts).
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
import { expressionSql, idsSql } from "../rules/memberships.js";
import { rootTraitExpression } from "../rules/trees.js";
import type { IdsByName } from "./sql/names.js";

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
  if (params.rootRequired.length > 0 || params.rootForbidden.length > 0) {
    const idsOf = (traits: string[]) => traits.map((t) => names.traits.get(t)!);
    const roots = rootTraitExpression(idsOf(params.rootRequired), idsOf(params.rootForbidden));
    if (!(await someProviderWhere(tx, ["rp.parent_provider_id IS NULL", ...expressionSql("traits", "rp.id", roots, idsSql)]))) return;
  }
  for (const g of groups) {
    for (const rc of g.resources.keys()) if (!names.resourceClasses.has(rc)) throw new ClassNotFound(rc, { in: "query" });
    if (g.aggregates.memberOf.length > 0) {
      // An aggregate nobody was ever put in has no id, and no member.
      const anyOf = g.aggregates.memberOf.map((list) => list.flatMap((uuid) => names.aggregates.get(uuid) ?? []));
      if (anyOf.some((list) => list.length === 0)) return;
      if (!(await someProviderWhere(tx, expressionSql("aggregates", "rp.id", { anyOf, forbidden: [] }, idsSql)))) return;
    }
    for (const t of groupTraits(g)) if (!names.traits.has(t)) throw new TraitNotFound([t], "query");
    if (!(await hasCandidates({ groups: [g], params: { ...params, limit: 1, sameSubtrees: [] } }))) return;
  }
}

/** Whether any provider meets all of `conditions` (SQL over `rp`, built from ids by rules/ only). */
async function someProviderWhere(tx: Queryable, conditions: string[]): Promise<boolean> {
  const res = await tx.execute(sql.raw(`SELECT 1 FROM resource_providers rp WHERE ${conditions.join(" AND ")} LIMIT 1`));
  return res.rows.length > 0;
}
