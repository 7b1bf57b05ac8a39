/**
 * The general plan: any cloud (trees, sharing providers), any request. Over
 * batches of root providers in id order, each batch fetches its trees whole
 * (providers, inventories with usage, traits; from the database or the
 * cloud view's copy, tree-reads.ts), then plans
 * on what it fetched with plan.ts's pure functions (capacity, filters, the
 * ways each anchor tree can satisfy each group). What every batch shares
 * (who has the named traits and aggregates, who shares, where the sharing
 * providers anchor, who meets a resourceless group's filters) is fetched
 * once per request, before the first batch (loadMembers): fetch first, then
 * plan, so no planning step waits on the database.
 */
import type { CandidatesQuery } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import { SHARING_TRAIT } from "./cloud-shape.js";
import { spreadOptions, type GroupOption } from "./combine.js";
import { classNamesOf, generate, inTreeRoots, type AnchorSource, type CandidatesResult, type EngineOptions } from "./generate.js";
import { IdMap } from "./id-map.js";
import { EMPTY, planBatch, resourcelessProviders, type Members, type Scope } from "./plan.js";
import type { IdsByName } from "./sql/names.js";
import type { TreeData } from "./sql/tree-loads.js";
import type { TreeReads } from "./tree-reads.js";

export type { Members } from "./plan.js";

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

/**
 * What every batch of `query` shares, in at most two reads: the
 * memberships of the named traits and aggregates, and the roots of the
 * providers meeting a resourceless group's filters. Where the sharing
 * providers anchor is read with the batches (generalSource), not here.
 */
export async function loadMembers(reads: TreeReads, query: CandidatesQuery, names: IdsByName): Promise<Members> {
  const { traits: traitsOf, aggregates: aggsOf } = await reads.memberships([...names.traits.values()], [...names.aggregates.values()]);
  const sharingTrait = names.traits.get(SHARING_TRAIT);
  const sharing = sharingTrait === undefined ? [] : [...traitsOf].filter(([, ts]) => ts.has(sharingTrait)).map(([rp]) => rp);
  const sharingSet = new Set(sharing);
  const wanted = resourcelessProviders(query, names, { traitsOf, aggsOf });
  const roots = await reads.rootsOf(unique([...wanted.values()].flat()).sort((a, b) => a - b));
  const resourceless = new Map(
    [...wanted].map(([g, ids]) => [g, ids.flatMap((rp): Array<[number, number]> => (roots.has(rp) ? [[rp, roots.get(rp)!]] : []))]),
  );
  return { traitsOf, aggsOf, sharing, isSharing: (rp) => sharingSet.has(rp), anchorsOf: new Map(), resourceless };
}

/**
 * The general planner over batches of root providers in id order (all of them
 * when no count is given). Each batch loads its trees whole (plus the trees
 * of the sharing providers that anchor into them, sharingTreesFor)
 * and checks capacity on what it loaded, so a limited request over 10,000
 * nested trees reads the few hundred trees it needs, and no request reads an
 * inventory twice. When a group with resources is pinned to a tree (in_tree),
 * only that tree and the trees its sharing providers anchor into can be
 * anchors, and only those are read.
 *
 * Where the sharing providers anchor (Members.anchorsOf, which the planner
 * reads only for the batch's anchors): a batch of a request that stops at
 * its limit reads the anchors into its own trees alone, so such a request
 * costs the trees it reads, not the cloud (over 100,000 nested trees with
 * 2,000 sharing providers, every anchor is 100,000 pairs, most of the
 * answer's time with limit=1000); a request that reads every tree (no
 * limit, randomize, breadth-first) or is pinned to trees reads every
 * anchor once, which costs less than a read per batch.
 */
export function generalSource(reads: TreeReads, query: CandidatesQuery, names: IdsByName, treeRoots: Map<string, number>, members: Members): AnchorSource {
  const rootOf = new IdMap<number>();
  // The trees of the sharing providers read so far (see sharingTreesFor), and their roots: their
  // inventories join every later batch's, and a batch does not read them again.
  const sharingTrees: TreeData = { providers: [], inventories: [], traits: new Map(), classNames: new Map() };
  const sharingRoots = new Set<number>();
  let pinned: number[] | undefined;
  // Every sharing provider's anchors, once read (see above).
  let allAnchors: Map<number, number[]> | undefined;
  const everyAnchor = async () => (allAnchors ??= await reads.sharingAnchors(members.sharing));
  const anchorsInto = async (roots: number[], everyTree: boolean): Promise<Map<number, number[]>> => {
    if (members.sharing.length === 0) return new Map();
    return everyTree || allAnchors !== undefined ? everyAnchor() : reads.sharingAnchors(members.sharing, roots);
  };
  const keepSharing = (data: TreeData, roots: ReadonlySet<number>) => {
    for (const r of roots) sharingRoots.add(r);
    for (const p of data.providers) if (roots.has(p.rootId)) sharingTrees.providers.push(p);
    for (const inv of data.inventories) if (roots.has(rootOf.get(inv.providerId)!)) sharingTrees.inventories.push(inv);
    for (const [rp, list] of data.traits) if (roots.has(rootOf.get(rp)!)) sharingTrees.traits.set(rp, list);
  };
  /**
   * The trees of the sharing providers `ids` not read yet, kept (keepSharing).
   * A request that reads every tree reads every sharing tree with its first
   * batch; one that stops at its limit, those of the sharing providers that
   * anchor into each batch's trees, as the batch comes (a few, where a
   * cloud of 100,000 nested trees has 2,000).
   */
  const sharingTreesFor = async (ids: number[]): Promise<TreeData | undefined> => {
    const missing = ids.filter((rp) => rootOf.get(rp) === undefined);
    if (missing.length === 0) return undefined;
    const found = await reads.trees(unique([...(await reads.rootsOf(missing)).values()]).filter((r) => !sharingRoots.has(r)));
    for (const p of found.providers) rootOf.set(p.id, p.rootId);
    keepSharing(found, new Set(found.providers.map((p) => p.rootId)));
    return found;
  };

  const pinnedRoots = async (): Promise<number[] | undefined> => {
    const roots = query.groups.flatMap((g) => (g.resources.size > 0 && treeRoots.has(g.suffix) ? [treeRoots.get(g.suffix)!] : []));
    if (roots.length === 0) return undefined;
    const found = members.sharing.length > 0 ? await everyAnchor() : new Map<number, number[]>();
    const anchors = members.sharing.flatMap((rp) => found.get(rp) ?? []);
    return unique([...roots, ...anchors]).sort((a, b) => a - b);
  };

  let batches = 0;
  return {
    next: async (afterId, count, everyBatch) => {
      const everyTree = count === undefined || everyBatch === true;
      const first = everyTree && batches++ === 0 ? await sharingTreesFor(members.sharing) : undefined;
      pinned ??= (await pinnedRoots()) ?? [];
      const { roots, data: batch } = await reads.batch(afterId, count, everyBatch === true, pinned.length > 0 ? pinned : undefined, sharingRoots);
      const after = roots.length > 0 ? roots[roots.length - 1] : afterId;
      const done = count === undefined || roots.length < count;
      const scanned = roots.length;
      if (roots.length === 0) return { anchors: [], data: first, after, done, scanned, optionsAt: noOptions };
      for (const p of batch.providers) rootOf.set(p.id, p.rootId);
      const anchorsOf = await anchorsInto(roots, everyTree);
      const inBatch = new Set(roots);
      const more = everyTree ? undefined : await sharingTreesFor([...anchorsOf.keys()]);
      const fresh = first ?? more;
      const scope: Scope = {
        inventories: [
          ...batch.inventories,
          ...sharingTrees.inventories.filter((inv) => members.isSharing(inv.providerId) || inBatch.has(rootOf.get(inv.providerId)!)),
        ],
        rootOf,
        anchors: inBatch,
      };
      // The sharing trees this batch read as its own trees serve the batches after it.
      const ownSharing = new Set(batch.providers.filter((p) => members.isSharing(p.id)).map((p) => p.rootId));
      if (ownSharing.size > 0) keepSharing(batch, ownSharing);
      const data = fresh ? merge(fresh, batch) : batch;
      const planned = planBatch(query, names, treeRoots, { ...members, anchorsOf }, scope);
      if (planned === EMPTY) return { anchors: [], data, after, done, scanned, optionsAt: noOptions };
      const { plans } = planned;
      // A sharing provider's own tree may lie outside the batch: it is combined when its batch comes.
      const anchors = [...plans[0].byAnchor.keys()].filter((a) => plans.every((p) => p.byAnchor.has(a)) && inBatch.has(a)).sort((x, y) => x - y);
      const traitsOf = (rp: number) => planned.traitsOf.get(rp);
      const optionsAt = (anchor: number) =>
        plans.map((p) =>
          p.kind === "options" ? p.byAnchor.get(anchor)! : spreadOptions(p.group.suffix, [...p.byAnchor.get(anchor)!.values()], traitsOf, p.required, p.forbidden),
        );
      return { anchors, data, after, done, scanned, optionsAt };
    },
    load: (roots) => reads.trees(roots),
    trees: names.hasTrees,
    rootOf: (id) => rootOf.get(id),
    isSharing: members.isSharing,
    onePerAnchor: false,
  };
}

const noOptions = (): GroupOption[][] => [];

/** Two loads of distinct trees as one. */
function merge(a: TreeData, b: TreeData): TreeData {
  return {
    providers: [...a.providers, ...b.providers].sort((x, y) => x.id - y.id),
    inventories: [...a.inventories, ...b.inventories],
    traits: new Map([...a.traits, ...b.traits]),
    classNames: new Map([...a.classNames, ...b.classNames]),
  };
}
