/**
 * The candidates engine: the plans that read inside one snapshot (a
 * transaction of the caller's) and generate candidates lazily. Placement's
 * semantics, reimplemented for speed:
 * 1. One lookup of the named classes, traits, aggregates and in_tree
 *    providers, with the cloud's shape (sql/names.ts lookupNames); a request with
 *    an unknown name gets Placement's 400 or its empty answer
 *    (unknown-names.ts).
 * 2. A source of anchor trees, the first of the database's answer paths
 *    (paths/chooser.ts) that takes the request: on a flat cloud
 *    flat-source.ts, one filter query that also takes the limit; otherwise
 *    general-source.ts, batches of trees loaded whole and planned in memory
 *    (generalCandidates, which the tree view also runs over the cloud
 *    view's trees).
 * 3. Combining groups tree by tree with the lazy depth-first search of
 *    combine.ts (generate.ts), stopping as soon as `limit` (or
 *    max_allocation_candidates) candidates exist. Randomized requests shuffle
 *    the trees and take them in that order; breadth-first interleaves the
 *    trees' candidates. Summaries are built once, from the loaded trees, for
 *    the trees the returned candidates use.
 * The paths over the cloud kept in memory (cloud-view.ts) read outside any
 * transaction and are offered the request by the service (service.ts) first.
 */
import type { Queryable } from "../../db/database.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import { SHARING_TRAIT } from "./cloud-shape.js";
import { classNamesOf, emptyResult, type CandidatesResult, type EngineOptions } from "./generate.js";
import { DATABASE_PATHS, firstTaking } from "./paths/chooser.js";
import type { DatabasePath } from "./paths/path.js";
import { lookupNames } from "./sql/names.js";
import { groupTraits, namesKnown, refuseUnknownName } from "./unknown-names.js";

export type { CandidatesResult, EngineOptions, ProviderSummary } from "./generate.js";

export interface EngineAnswer {
  result: CandidatesResult;
  /** Which path answered (undefined when the lookups alone showed there are none). */
  path: DatabasePath["name"] | undefined;
}

/**
 * Every candidate of `query`, read through `tx` (one snapshot: the caller's
 * transaction), by the first of `paths` that takes it.
 */
export async function findCandidates(tx: Queryable, query: CandidatesQuery, opts: EngineOptions, paths: readonly DatabasePath[] = DATABASE_PATHS): Promise<EngineAnswer> {
  const { groups, params } = query;

  // Names first, with Placement's 400s, in its order: anchor traits, then each group's classes and traits.
  const names = await lookupNames(
    tx,
    unique(groups.flatMap((g) => [...g.resources.keys()])),
    unique([...params.rootRequired, ...params.rootForbidden, ...groups.flatMap(groupTraits), SHARING_TRAIT]),
    unique(groups.flatMap((g) => [...g.aggregates.memberOf.flat(), ...g.aggregates.forbidden])),
    unique(groups.flatMap((g) => (g.inTree ? [g.inTree] : []))),
  );
  const none = { result: emptyResult(classNamesOf(names)), path: undefined };
  if (!namesKnown(query, names)) {
    // Whether an unknown name is a 400 depends on what Placement's search found before reaching it.
    const groupSearch = async (q: CandidatesQuery) => (await findCandidates(tx, q, { ...opts, onCandidate: undefined, randomize: false })).result.candidates.length > 0;
    await refuseUnknownName(tx, query, names, groupSearch);
    return none;
  }

  const chosen = firstTaking(paths, (p) => p.take(tx, query, names, opts));
  if (!chosen) throw new Error(`none of the paths ${paths.map((p) => p.name).join(", ")} takes this request`);
  const result = await chosen.taken();
  return result ? { result, path: chosen.path.name } : none;
}
