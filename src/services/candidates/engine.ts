/**
 * The candidates engine: the plans that read inside one snapshot (a
 * transaction of the caller's) and generate candidates lazily. Placement's
 * semantics, reimplemented for speed:
 * 1. One lookup of the named classes, traits, aggregates and in_tree
 *    providers, with the cloud's shape (sql.ts lookupNames); a request with
 *    an unknown name gets Placement's 400 or its empty answer
 *    (unknown-names.ts).
 * 2. A source of anchor trees: on a flat cloud flat-source.ts, one filter
 *    query that also takes the limit; otherwise general-source.ts, batches of
 *    trees loaded whole and planned in memory (generalCandidates, which the
 *    service also runs over the cloud view's trees).
 * 3. Combining groups tree by tree with the lazy depth-first search of
 *    combine.ts (generate.ts), stopping as soon as `limit` (or
 *    max_allocation_candidates) candidates exist. Randomized requests shuffle
 *    the trees and take them in that order; breadth-first interleaves the
 *    trees' candidates. Summaries are built once, from the loaded trees, for
 *    the trees the returned candidates use.
 * The paths over the cloud kept in memory (cloud-view.ts) read outside any
 * transaction and are chosen by the service (service.ts), not here.
 */
import type { Queryable } from "../../db/database.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import { isFlat, SHARING_TRAIT } from "./cloud-shape.js";
import { planFlat } from "./flat-source.js";
import { generalSource, loadMembers } from "./general-source.js";
import { emptyResult, generate, type CandidatesResult, type EngineOptions } from "./generate.js";
import { loadTrees, lookupNames, type IdsByName } from "./sql.js";
import { sqlTreeReads, type TreeReads } from "./tree-reads.js";
import { groupTraits, namesKnown, refuseUnknownName } from "./unknown-names.js";

export type { CandidatesResult, EngineOptions, ProviderSummary } from "./generate.js";

/** The engine's two sources; which one answers is decided from the cloud's shape unless a test forces it. */
export type EnginePath = "flat-source" | "general";

export interface EngineAnswer {
  result: CandidatesResult;
  /** Which source answered (undefined when the lookups alone showed there are none). */
  path: EnginePath | undefined;
}

/** Every candidate of `query`, read through `tx` (one snapshot: the caller's transaction). */
export async function findCandidates(tx: Queryable, query: CandidatesQuery, opts: EngineOptions & { path?: EnginePath }): Promise<EngineAnswer> {
  const { groups, params } = query;

  // Names first, with Placement's 400s, in its order: anchor traits, then each group's classes and traits.
  const names = await lookupNames(
    tx,
    unique(groups.flatMap((g) => [...g.resources.keys()])),
    unique([...params.rootRequired, ...params.rootForbidden, ...groups.flatMap(groupTraits), SHARING_TRAIT]),
    unique(groups.flatMap((g) => [...g.aggregates.memberOf.flat(), ...g.aggregates.forbidden])),
    unique(groups.flatMap((g) => (g.inTree ? [g.inTree] : []))),
  );
  const flat = isFlat(names);
  const none = { result: emptyResult(classNamesOf(names)), path: undefined };
  if (!namesKnown(query, names)) {
    // Whether an unknown name is a 400 depends on what Placement's search found before reaching it.
    const groupSearch = async (q: CandidatesQuery) => (await findCandidates(tx, q, { ...opts, onCandidate: undefined, randomize: false, path: undefined })).result.candidates.length > 0;
    await refuseUnknownName(tx, query, names, groupSearch);
    return none;
  }

  const path = opts.path ?? (flat ? "flat-source" : "general");
  if (path === "flat-source") {
    if (!flat) throw new Error("the flat source cannot answer a cloud with trees or sharing providers");
    const treeRoots = inTreeRoots(query, names);
    const source = treeRoots && planFlat(tx, query, names, treeRoots);
    if (!source) return none;
    const flatSource = { ...source, load: (roots: number[]) => loadTrees(tx, roots), trees: false, rootOf: () => undefined, isSharing: () => false, onePerAnchor: true };
    return { result: await generate(query, opts, flatSource, classNamesOf(names)), path };
  }
  const result = await generalCandidates(sqlTreeReads(tx), query, names, opts);
  return result ? { result, path } : none;
}

/**
 * The general plan over `reads` (the database's, or the cloud view's) for a
 * request whose names are all known (namesKnown), its in_tree providers
 * among them; undefined when it can have no candidates.
 */
export async function generalCandidates(reads: TreeReads, query: CandidatesQuery, names: IdsByName, opts: EngineOptions): Promise<CandidatesResult | undefined> {
  const treeRoots = inTreeRoots(query, names);
  if (!treeRoots) return undefined;
  // As Placement: a resourceless group is found through its positive filters only; without any, nothing matches.
  if (query.groups.some((g) => g.resources.size === 0 && g.traits.required.length === 0 && g.aggregates.memberOf.length === 0)) return undefined;
  const members = await loadMembers(reads, query, names);
  return generate(query, opts, generalSource(reads, query, names, treeRoots, members), classNamesOf(names));
}

/** in_tree roots by group suffix; undefined when one names no provider (no candidates at all). */
function inTreeRoots(query: CandidatesQuery, names: IdsByName): Map<string, number> | undefined {
  const treeRoots = new Map<string, number>();
  for (const g of query.groups) {
    if (!g.inTree) continue;
    const root = names.treeRoots.get(g.inTree);
    if (root === undefined) return undefined;
    treeRoots.set(g.suffix, root);
  }
  return treeRoots;
}

/** Class id to name for the classes the lookup found (a tree load adds every other class's). */
const classNamesOf = (names: IdsByName): Map<number, string> => new Map([...names.resourceClasses].map(([name, id]) => [id, name]));
