/**
 * The general plan: any cloud (trees, sharing providers), any request. Over
 * batches of root providers in id order, each batch fetches its trees whole
 * (sql.ts loadTrees: providers, inventories with usage, traits), then plans
 * on what it fetched with plan.ts's pure functions (capacity, filters, the
 * ways each anchor tree can satisfy each group). What every batch shares
 * (who has the named traits and aggregates, who shares, where the sharing
 * providers anchor, who meets a resourceless group's filters) is fetched
 * once per request, before the first batch (loadMembers): fetch first, then
 * plan, so no planning step waits on the database.
 */
import type { Queryable } from "../../db/database.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import { SHARING_TRAIT } from "./cloud-shape.js";
import { spreadOptions, type GroupOption } from "./combine.js";
import type { AnchorSource } from "./generate.js";
import { IdMap } from "./id-map.js";
import { EMPTY, planBatch, resourcelessProviders, type Members, type Scope } from "./plan.js";
import { loadTreeRangeTexts, loadTrees, loadTreesAfter, loadTreeTexts, memberships, readTrees, rootIdsAfter, rootsOf, sharingAnchors, type IdsByName, type TreeData } from "./sql.js";

export type { Members } from "./plan.js";

/**
 * What every batch of `query` shares, in at most three round trips: the
 * memberships of the named traits and aggregates, the anchors of every
 * sharing provider, and the roots of the providers meeting a resourceless
 * group's filters.
 */
export async function loadMembers(tx: Queryable, query: CandidatesQuery, names: IdsByName): Promise<Members> {
  const { traits: traitsOf, aggregates: aggsOf } = await memberships(tx, [...names.traits.values()], [...names.aggregates.values()]);
  const sharingTrait = names.traits.get(SHARING_TRAIT);
  const sharing = sharingTrait === undefined ? [] : [...traitsOf].filter(([, ts]) => ts.has(sharingTrait)).map(([rp]) => rp);
  const sharingSet = new Set(sharing);
  const found = await sharingAnchors(tx, sharing);
  const anchorsOf = new Map(sharing.map((rp) => [rp, found.get(rp) ?? []]));
  const wanted = resourcelessProviders(query, names, { traitsOf, aggsOf });
  const roots = await rootsOf(tx, unique([...wanted.values()].flat()).sort((a, b) => a - b));
  const resourceless = new Map(
    [...wanted].map(([g, ids]) => [g, ids.flatMap((rp): Array<[number, number]> => (roots.has(rp) ? [[rp, roots.get(rp)!]] : []))]),
  );
  return { traitsOf, aggsOf, sharing, isSharing: (rp) => sharingSet.has(rp), anchorsOf, resourceless };
}

/**
 * The general planner over batches of root providers in id order (all of them
 * when no count is given). Each batch loads its trees whole (plus, with the
 * first batch, the trees of the sharing providers, which any anchor may use)
 * and checks capacity on what it loaded, so a limited request over 10,000
 * nested trees reads the few hundred trees it needs, and no request reads an
 * inventory twice. When a group with resources is pinned to a tree (in_tree),
 * only that tree and the trees its sharing providers anchor into can be
 * anchors, and only those are read.
 */
export function generalSource(tx: Queryable, query: CandidatesQuery, names: IdsByName, treeRoots: Map<string, number>, members: Members): AnchorSource {
  const rootOf = new IdMap<number>();
  // The sharing providers' own trees, loaded with the first batch; their inventories join every batch's.
  let sharingTrees: TreeData | undefined;
  const sharingRoots = new Set<number>();
  let pinned: number[] | undefined;

  const pinnedRoots = (): number[] | undefined => {
    const roots = query.groups.flatMap((g) => (g.resources.size > 0 && treeRoots.has(g.suffix) ? [treeRoots.get(g.suffix)!] : []));
    if (roots.length === 0) return undefined;
    const anchors = members.sharing.flatMap((rp) => members.anchorsOf.get(rp) ?? []);
    return unique([...roots, ...anchors]).sort((a, b) => a - b);
  };
  const treesOf = async (roots: number[]): Promise<Loaded> => ({ roots, data: await loadTrees(tx, roots.filter((r) => !sharingRoots.has(r))) });
  // The batch's roots and its trees but the sharing providers' (loaded with the first batch).
  const batchAfter = async (afterId: number, count: number | undefined): Promise<Loaded> => {
    pinned ??= pinnedRoots() ?? [];
    if (pinned.length === 0) return loadTreesAfter(tx, afterId, count, [...sharingRoots]);
    const fromPinned = pinned.filter((r) => r > afterId);
    return treesOf(count === undefined ? fromPinned : fromPinned.slice(0, count));
  };
  // When every batch is wanted: all the roots to come, known at once, so that the next batches'
  // trees are asked for before this one is planned and combined, and PostgreSQL (on the other core)
  // always has the next load to run, where each load waited for the engine to finish with the one
  // before. Batch k holds roots[k * count, (k + 1) * count).
  // `consecutive`: the roots are every root after `after` (not the pinned ones), so a batch's trees are
  // those with a root in the range of its first and last root's ids.
  let ahead: { after: number; count: number; roots: number[]; consecutive: boolean; loads: Map<number, Promise<Loaded>>; last: Promise<unknown> } | undefined;
  const batchAhead = async (afterId: number, count: number): Promise<Loaded> => {
    if (ahead === undefined) {
      pinned ??= pinnedRoots() ?? [];
      const roots = pinned.length > 0 ? pinned.filter((r) => r > afterId) : await rootIdsAfter(tx, afterId);
      ahead = { after: afterId, count, roots, consecutive: pinned.length === 0, loads: new Map(), last: Promise.resolve() };
    }
    const state = ahead;
    const { roots, loads } = state;
    const load = (k: number): Promise<Loaded> => {
      let found = loads.get(k);
      if (found === undefined) {
        // Each load is sent once the one before has answered: one connection runs one statement at a
        // time anyway, and pg deprecates queueing a query on a client that is still running one.
        const slice = roots.slice(k * count, (k + 1) * count);
        const send = () =>
          slice.length > 0 && state.consecutive
            ? loadTreeRangeTexts(tx, slice[0], slice[slice.length - 1], [...sharingRoots])
            : loadTreeTexts(tx, slice.filter((r) => !sharingRoots.has(r)));
        const texts = state.last.then(send, send);
        state.last = texts;
        found = texts.then((t) => ({ roots: slice, data: readTrees(t) }));
        // Awaited when its batch is asked for; a failure before that must not go unhandled.
        found.catch(() => {});
        loads.set(k, found);
      }
      return found;
    };
    const start = afterId === ahead.after ? 0 : roots.indexOf(afterId) + 1;
    // Only batches cut here follow each other like this; any other (the caller does not ask for one) is read on its own.
    if (count !== ahead.count || (start === 0 && afterId !== ahead.after) || start % count !== 0) return batchAfter(afterId, count);
    const k = start / count;
    const asked = load(k);
    loads.delete(k);
    // Sent after this batch's on the one connection, so PostgreSQL runs them in order.
    for (let j = k + 1; j <= k + READ_AHEAD && j * count < roots.length; j++) load(j);
    return asked;
  };

  return {
    next: async (afterId, count, everyBatch) => {
      const firstBatch = sharingTrees === undefined;
      if (firstBatch) {
        const ids = new Set(members.sharing);
        const found = members.sharing.length > 0 ? await loadTrees(tx, [...(await rootsOf(tx, members.sharing)).values()]) : undefined;
        sharingTrees = found ?? { providers: [], inventories: [], traits: new Map() };
        for (const p of sharingTrees.providers) if (ids.has(p.id)) sharingRoots.add(p.rootId);
      }
      const { roots, data: batch } = everyBatch && count !== undefined ? await batchAhead(afterId, count) : await batchAfter(afterId, count);
      const after = roots.length > 0 ? roots[roots.length - 1] : afterId;
      const done = count === undefined || roots.length < count;
      const scanned = roots.length;
      if (roots.length === 0) return { anchors: [], after, done, scanned, optionsAt: noOptions };
      for (const p of batch.providers) rootOf.set(p.id, p.rootId);
      for (const p of sharingTrees!.providers) rootOf.set(p.id, p.rootId);
      const inBatch = new Set(roots);
      const scope: Scope = {
        inventories: [
          ...batch.inventories,
          ...sharingTrees!.inventories.filter((inv) => members.isSharing(inv.providerId) || inBatch.has(rootOf.get(inv.providerId)!)),
        ],
        rootOf,
        anchors: inBatch,
      };
      const data = firstBatch ? merge(sharingTrees!, batch) : batch;
      const planned = planBatch(query, names, treeRoots, members, scope);
      if (planned === EMPTY) return { anchors: [], data, after, done, scanned, optionsAt: noOptions };
      const { plans } = planned;
      // A sharing provider's own tree may lie outside the batch: it is combined when its batch comes.
      const anchors = [...plans[0].byAnchor.keys()].filter((a) => plans.every((p) => p.byAnchor.has(a)) && inBatch.has(a)).sort((x, y) => x - y);
      const optionsAt = (anchor: number) =>
        plans.map((p) =>
          p.kind === "options"
            ? p.byAnchor.get(anchor)!
            : [...spreadOptions(p.group.suffix, [...p.byAnchor.get(anchor)!.values()], (rp) => planned.traitsOf.get(rp), p.required, p.forbidden)],
        );
      return { anchors, data, after, done, scanned, optionsAt };
    },
    trees: names.hasTrees,
    rootOf: (id) => rootOf.get(id),
    isSharing: members.isSharing,
    onePerAnchor: false,
  };
}

const noOptions = (): GroupOption[][] => [];

/** A batch's roots and their trees. */
type Loaded = { roots: number[]; data: TreeData };

/** Batches whose trees are asked for beyond the one being planned (each a few hundred trees in memory). */
const READ_AHEAD = 2;

/** Two loads of distinct trees as one. */
function merge(a: TreeData, b: TreeData): TreeData {
  return {
    providers: [...a.providers, ...b.providers].sort((x, y) => x.id - y.id),
    inventories: [...a.inventories, ...b.inventories],
    traits: new Map([...a.traits, ...b.traits]),
  };
}
