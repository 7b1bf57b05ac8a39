/**
 * The tree view's path: the general plan (general-source.ts) over the copy's
 * trees (view-tree-reads.ts), for a cloud with trees or sharing providers.
 * The trees it is given never change (cloud-trees.ts), so the plan may await
 * the sink's room between batches while other requests move the copy on,
 * and an upper bound on the answer's bytes can be counted on them whenever
 * the sink asks (answer-bound.ts), once per state of the copy and query.
 *
 * Over a flat cloud the plan gives the same answers, but the copy's trees
 * would be built for the few requests the flat view declines, which the
 * database's flat source answers without them: so by default it declines a
 * flat cloud; `overFlatClouds` lets the contract suite run it there too.
 */
import { setImmediate as turn } from "node:timers/promises";
import { answerBytesAtMost, boundKey, CountedBounds } from "../answer-bound.js";
import { generalCandidates } from "../general-source.js";
import { viewTreeReads } from "../view-tree-reads.js";
import { emit, type ViewPath } from "./path.js";

export function treeViewPath(options: { overFlatClouds?: boolean } = {}): ViewPath {
  return {
    name: "tree-view",
    over: "view",
    take(read, { query, engine, sink }) {
      if (read.flat && !options.overFlatClouds) return undefined;
      const names = { ...read.names, treeRoots: new Map<string, number>() };
      for (const g of query.groups) {
        const root = g.inTree ? read.byUuid.get(g.inTree)?.rootId : undefined;
        if (g.inTree && root) names.treeRoots.set(g.inTree, root);
      }
      // Taken now, within the read: the request's state of the copy.
      const trees = read.trees();
      const classNames = read.classNames;
      // Taken within the read too: the memo of the state these trees are of (a change empties it).
      const bounds = read.memo(`answer-bound ${boundKey(query, names, classNames)}`, () => new CountedBounds());
      const between = sink.room ? () => sink.room!() : () => turn();
      return async () => {
        sink.bounded?.((lengths, over) => bounds.atMost(lengths, over, () => answerBytesAtMost(trees, names, classNames, query, lengths, over)));
        const result = await generalCandidates(viewTreeReads(trees, classNames, between), query, names, engine);
        emit(result, sink);
        return result !== undefined;
      };
    },
  };
}
