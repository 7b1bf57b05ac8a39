/**
 * The general plan's reads (tree-reads.ts) over the cloud view's trees
 * (cloud-trees.ts) instead of the database: the same answers as the
 * database's reads in the snapshot the view was brought to, with no round
 * trip, no text to parse and no objects made per request for what did not
 * change. The contract suite runs this path and the database's alone over the
 * same clouds and compares the bytes.
 *
 * Between batches it waits on `between` (the sink's room): a turn of the
 * event loop, as a read of the database gives, so the body written so far
 * leaves and other requests go on, and once the body streams, until little
 * enough of it waits to be sent; meanwhile the trees this request reads stay
 * as they were (ViewTrees never changes).
 */
import type { ViewTree, ViewTrees } from "./cloud-trees.js";
import { addTo } from "./sql/memberships.js";
import type { TreeData } from "./sql/tree-loads.js";
import type { Loaded, TreeReads } from "./tree-reads.js";

/** Reads of `trees`, whose classes are named by `classNames` (the request's read of the view); `between` is awaited before every batch but the first. */
export function viewTreeReads(trees: ViewTrees, classNames: Map<number, string>, between: () => Promise<void>): TreeReads {
  const dataOf = (list: ViewTree[]): TreeData => {
    if (list.length === 1) return { ...list[0].data, classNames };
    const data: TreeData = { providers: [], inventories: [], traits: new Map(), classNames };
    for (const t of list) {
      for (const p of t.data.providers) data.providers.push(p);
      for (const inv of t.data.inventories) data.inventories.push(inv);
      for (const [id, names] of t.data.traits) data.traits.set(id, names);
    }
    return data;
  };
  const treesOf = (roots: Iterable<number>): ViewTree[] => {
    const out: ViewTree[] = [];
    for (const r of roots) {
      const t = trees.tree(r);
      if (t) out.push(t);
    }
    return out;
  };
  let batches = 0;

  return {
    memberships: async (traitIds, aggregateIds) => {
      const out = { traits: new Map<number, Set<number>>(), aggregates: new Map<number, Set<number>>() };
      if (traitIds.length === 0 && aggregateIds.length === 0) return out;
      for (const p of trees.providers()) {
        for (const t of traitIds) if (p.traits.has(t)) addTo(out.traits, p.id, t);
        for (const a of aggregateIds) if (p.aggregates.has(a)) addTo(out.aggregates, p.id, a);
      }
      return out;
    },
    sharingAnchors: async (sharingIds, amongRoots) => {
      const out = new Map<number, number[]>();
      const among = amongRoots && new Set(amongRoots);
      for (const rp of sharingIds) {
        const aggregates = trees.provider(rp)?.aggregates;
        if (!aggregates || aggregates.size === 0) continue;
        const anchors = new Set<number>();
        for (const a of aggregates) for (const root of trees.rootsIn(a)) if (!among || among.has(root)) anchors.add(root);
        if (anchors.size > 0 || !among) out.set(rp, [...anchors].sort((x, y) => x - y));
      }
      return out;
    },
    rootsOf: async (ids) => {
      const out = new Map<number, number>();
      for (const id of [...ids].sort((a, b) => a - b)) {
        const p = trees.provider(id);
        if (p) out.set(id, p.rootId);
      }
      return out;
    },
    trees: async (roots) => dataOf(treesOf(new Set(roots))),
    batch: async (afterId, count, _everyBatch, among, except): Promise<Loaded> => {
      if (batches++ > 0) await between();
      let roots: number[];
      if (among !== undefined) {
        const after = among.filter((r) => r > afterId);
        roots = count === undefined ? after : after.slice(0, count);
      } else {
        const from = trees.indexAfter(afterId);
        const to = count === undefined ? trees.list.length : Math.min(trees.list.length, from + count);
        roots = [];
        for (let i = from; i < to; i++) roots.push(trees.list[i].rootId);
      }
      return { roots, data: dataOf(treesOf(roots.filter((r) => !except.has(r)))) };
    },
  };
}
