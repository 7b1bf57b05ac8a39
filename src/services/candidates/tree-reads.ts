/**
 * What the general plan (general-source.ts) reads, and where from: the
 * database, inside the request's snapshot (sqlTreeReads, here), or the cloud
 * view's copy of one snapshot (view-tree-reads.ts). The plan is the same
 * over either; only the reads differ.
 *
 * Over the database, a request without a limit knows every root at once
 * (rootIdsAfter) and asks for the next batches' trees before a batch is
 * planned and combined, so PostgreSQL (on the other core) always has the
 * next load to run, where each load waited for the engine to finish with the
 * one before.
 */
import type { Queryable } from "../../db/database.js";
import { memberships, rootsOf, sharingAnchors, sharingAnchorsAmong } from "./sql/memberships.js";
import { loadTreeRangeTexts, loadTrees, loadTreesAfter, loadTreeTexts, readTrees, rootIdsAfter, type TreeData } from "./sql/tree-loads.js";

/** A batch's roots and their trees. */
export interface Loaded {
  roots: number[];
  data: TreeData;
}

export interface TreeReads {
  /** Provider id to the subset of `traitIds` it has and to the subset of `aggregateIds` it is in. */
  memberships(traitIds: number[], aggregateIds: number[]): Promise<{ traits: Map<number, Set<number>>; aggregates: Map<number, Set<number>> }>;
  /**
   * Per sharing provider, the roots of the trees it anchors into
   * (sql/memberships.ts sharingAnchors); with `amongRoots`, only those
   * roots (sharingAnchorsAmong).
   */
  sharingAnchors(sharingIds: number[], amongRoots?: number[]): Promise<Map<number, number[]>>;
  /** Provider id to root id, in provider id order. */
  rootsOf(ids: number[]): Promise<Map<number, number>>;
  /** The trees under `rootIds`, whole. */
  trees(rootIds: number[]): Promise<TreeData>;
  /**
   * The next `count` roots after `afterId` (every one when undefined), in id
   * order, of `among` when given (ascending) or else of the whole cloud, and
   * their trees but those rooted in `except`. `everyBatch` as in
   * AnchorSource.next: every later batch will be asked for in turn.
   */
  batch(afterId: number, count: number | undefined, everyBatch: boolean, among: number[] | undefined, except: ReadonlySet<number>): Promise<Loaded>;
}

/** Batches whose trees are asked for beyond the one being planned (each a few hundred trees in memory). */
const READ_AHEAD = 2;

/** The general plan's reads through `tx` (one snapshot: the caller's transaction). */
export function sqlTreeReads(tx: Queryable): TreeReads {
  const treesBut = (roots: number[], except: ReadonlySet<number>) => loadTrees(tx, roots.filter((r) => !except.has(r)));
  const batchAfter = async (afterId: number, count: number | undefined, among: number[] | undefined, except: ReadonlySet<number>): Promise<Loaded> => {
    if (among === undefined) return loadTreesAfter(tx, afterId, count, [...except]);
    const after = among.filter((r) => r > afterId);
    const roots = count === undefined ? after : after.slice(0, count);
    return { roots, data: await treesBut(roots, except) };
  };

  // Batch k holds roots[k * count, (k + 1) * count). `consecutive`: the roots are every root after
  // `after` (not a given list), so a batch's trees are those with a root in the range of its first and
  // last root's ids.
  let ahead: { after: number; count: number; roots: number[]; consecutive: boolean; loads: Map<number, Promise<Loaded>>; last: Promise<unknown> } | undefined;
  const batchAhead = async (afterId: number, count: number, among: number[] | undefined, except: ReadonlySet<number>): Promise<Loaded> => {
    if (ahead === undefined) {
      const roots = among !== undefined ? among.filter((r) => r > afterId) : await rootIdsAfter(tx, afterId);
      ahead = { after: afterId, count, roots, consecutive: among === undefined, loads: new Map(), last: Promise.resolve() };
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
            ? loadTreeRangeTexts(tx, slice[0], slice[slice.length - 1], [...except])
            : loadTreeTexts(tx, slice.filter((r) => !except.has(r)));
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
    if (count !== ahead.count || (start === 0 && afterId !== ahead.after) || start % count !== 0) return batchAfter(afterId, count, among, except);
    const k = start / count;
    const asked = load(k);
    loads.delete(k);
    // Sent after this batch's on the one connection, so PostgreSQL runs them in order.
    for (let j = k + 1; j <= k + READ_AHEAD && j * count < roots.length; j++) load(j);
    return asked;
  };

  return {
    memberships: (traitIds, aggregateIds) => memberships(tx, traitIds, aggregateIds),
    sharingAnchors: (ids, among) => (among === undefined ? sharingAnchors(tx, ids) : sharingAnchorsAmong(tx, ids, among)),
    rootsOf: (ids) => rootsOf(tx, ids),
    trees: (roots) => loadTrees(tx, roots),
    batch: (afterId, count, everyBatch, among, except) =>
      everyBatch && count !== undefined ? batchAhead(afterId, count, among, except) : batchAfter(afterId, count, among, except),
  };
}
