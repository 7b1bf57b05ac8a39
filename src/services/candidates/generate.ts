/**
 * Generating candidates from a source of anchor trees: load the trees a batch
 * needs (providers, inventories with usage, traits), combine each anchor's
 * group options lazily (combine.ts), keep what the rules allow, stop at the
 * cap, and build the summaries of the trees the answer uses. The sources are
 * the general plan (general-source.ts) and the flat source (flat-source.ts).
 */
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { AnswerShape } from "./answer-shape.js";
import { candidateKey, mergeGroups, roundRobin, shuffle, sortByKey, type Candidate, type GroupOption } from "./combine.js";
import { IdMap, IdSet } from "./id-map.js";
import type { IdsByName } from "./sql/names.js";
import type { TreeData, TreeInventory, TreeProvider } from "./sql/tree-loads.js";

export interface EngineOptions {
  /** The answer's shape; the search reads its `tree` (1.29: candidates may take resources from several providers of one tree). */
  shape: Pick<AnswerShape, "tree">;
  randomize: boolean;
  /** Placement's max_allocation_candidates; -1 for no cap. */
  maxCandidates: number;
  strategy: "depth-first" | "breadth-first";
  /**
   * Receives each candidate as it is found, instead of the result collecting
   * them (not with randomize, which shuffles the whole list): the caller can
   * render it at once, so a huge answer is never held as objects.
   */
  onCandidate?: (candidate: Candidate, names: NamesById) => void;
}

/** Lookups from ids to the names a response shows. */
export interface NamesById {
  uuidOf: (providerId: number) => string;
  resourceClassName: (id: number) => string;
}

export interface ProviderSummary {
  provider: TreeProvider;
  inventories: readonly TreeInventory[];
  traits: string[];
}

export interface CandidatesResult extends NamesById {
  /** The candidates, unless they went to `onCandidate`. */
  candidates: Candidate[];
  count: number;
  summaries: ProviderSummary[];
}

/**
 * Trees per batch when there is no limit: bounds the plan held in memory at
 * once, and is small enough that PostgreSQL loads the next batch while this
 * one is combined (see generate).
 */
const UNLIMITED_BATCH = 250;

/** One step of walking the trees in id order. */
export interface Batch {
  /** Trees to combine in, in order; with `data`, already loaded. */
  anchors: number[];
  data?: TreeData;
  /** Where the next batch starts. */
  after: number;
  /** Nothing is left after this batch. */
  done: boolean;
  /** How many trees this batch looked at (sizes the next one). */
  scanned: number;
  /** Each group's options at one of this batch's anchors. */
  optionsAt(anchor: number): GroupOption[][];
}

/** Where anchors come from: the general planner, batch by batch of root providers, or the flat path's SQL. */
export interface AnchorSource {
  /**
   * The trees after `afterId`, about `count` of them (all when undefined).
   * `everyBatch`: the caller will ask for every batch after this one, each
   * starting where the one before ended, with the same count (no limit), so
   * the source may load batches ahead.
   */
  next(afterId: number, count: number | undefined, everyBatch?: boolean): Promise<Batch>;
  /** The trees under `rootIds`, whole (for anchors whose batch came without them). */
  load(rootIds: number[]): Promise<TreeData>;
  trees: boolean;
  rootOf(providerId: number): number | undefined;
  isSharing(providerId: number): boolean;
  /** Every anchor yields at most one candidate (flat trees), so batches can be sized from the limit alone. */
  onePerAnchor: boolean;
}

export async function generate(
  query: CandidatesQuery,
  opts: EngineOptions,
  source: AnchorSource,
  rcNames: Map<number, string>,
): Promise<CandidatesResult> {
  const { params } = query;

  const caps = [params.limit ?? Infinity, opts.maxCandidates > 0 ? opts.maxCandidates : Infinity];
  const cap = Math.min(...caps);

  const providers = new IdMap<TreeProvider>();
  const traitNames = new IdMap<string[]>();
  const loadedRoots = new IdSet();
  const ingest = (data: TreeData) => {
    for (const p of data.providers) {
      providers.set(p.id, p);
      loadedRoots.add(p.rootId);
    }
    for (const [id, name] of data.classNames) rcNames.set(id, name);
    for (const [rp, names] of data.traits) traitNames.set(rp, names);
  };
  const load = async (roots: number[]) => {
    const missing = roots.filter((r) => !loadedRoots.has(r));
    if (missing.length === 0) return;
    for (const r of missing) loadedRoots.add(r);
    ingest(await source.load(missing));
  };

  const rules = {
    isolate: params.groupPolicy === "isolate",
    sameSubtrees: params.sameSubtrees,
    parentOf: (id: number) => providers.get(id)?.parentId ?? null,
    // A provider has a handful of inventories: a scan beats a keyed Map (and a loop, unlike find, makes no closure).
    capacityOf: (id: number, rc: number) => {
      const inventories = providers.get(id)?.inventories;
      if (inventories) for (const inv of inventories) if (inv.resourceClassId === rc) return inv;
      return undefined;
    },
  };
  const excludeNested = !opts.shape.tree && source.trees;
  const rootOfProvider = (id: number) => providers.get(id)?.rootId ?? source.rootOf(id)!;

  const out: Candidate[] = [];
  let count = 0;
  const used = new IdSet();
  const sink = opts.randomize ? undefined : opts.onCandidate;
  const names: NamesById = { uuidOf: (id) => providers.get(id)!.uuid, resourceClassName: (id) => rcNames.get(id)! };
  const seen = new Set<string>();
  // Loops, not every() with an arrow: an arrow made in take is a closure made for every candidate.
  const allSharing = (c: Candidate): boolean => {
    for (const r of c.resources) if (!source.isSharing(r.providerId)) return false;
    for (const o of c.groups) for (const p of o.providers) if (!source.isSharing(p)) return false;
    return true;
  };
  const take = (c: Candidate): boolean => {
    if (excludeNested) {
      const roots = c.resources.map((r) => rootOfProvider(r.providerId));
      if (new Set(roots).size !== new Set(c.resources.map((r) => r.providerId)).size) return false;
    }
    // Only a candidate made of sharing providers alone can come from several anchors. (Placement
    // deduplicates each group's requests before merging, which keeps one arbitrary anchor for a
    // group served by a sharing provider alone and so loses candidates; we keep every anchor.)
    if (allSharing(c)) {
      const key = candidateKey(c);
      if (seen.has(key)) return false;
      seen.add(key);
    }
    count++;
    for (const rr of c.resources) used.add(rr.providerId);
    if (sink) sink(c, names);
    else out.push(c);
    return count >= cap;
  };
  const run = async ({ anchors, optionsAt }: Pick<Batch, "anchors" | "optionsAt">): Promise<boolean> => {
    await load(anchors);
    if (opts.strategy === "breadth-first") {
      for (const c of roundRobin(anchors.map((a) => mergeGroups(a, optionsAt(a), rules)))) if (take(c)) return true;
      return false;
    }
    // Depth-first: tree after tree, each candidate straight from its tree's generator (a chaining
    // generator on top cost one more resume and result object per candidate).
    for (const a of anchors) for (const c of mergeGroups(a, optionsAt(a), rules)) if (take(c)) return true;
    return false;
  };
  if (opts.randomize || opts.strategy === "breadth-first" || (!Number.isFinite(cap) && source.onePerAnchor)) {
    // Random sampling and breadth-first interleaving need the whole list of trees; so does everything flat.
    const all = await source.next(0, undefined);
    if (all.data) ingest(all.data);
    await run({ anchors: opts.randomize ? shuffle(all.anchors) : all.anchors, optionsAt: all.optionsAt });
  } else {
    // Depth-first under a limit: trees in id order, in batches sized from the candidates per tree seen
    // so far (a flat tree gives at most one), until enough candidates.
    let afterId = 0;
    let scanned = 0;
    // Without a limit, trees still go in fixed batches, so at most a few batches (this one and those
    // the source reads ahead) are in memory at a time.
    let batch = !Number.isFinite(cap) ? UNLIMITED_BATCH : source.onePerAnchor ? Math.ceil(cap * 1.1) : Math.min(Math.ceil(cap * 1.1), 64);
    const everyBatch = !Number.isFinite(cap);
    let pending = source.next(afterId, batch, everyBatch);
    for (;;) {
      const next = await pending;
      if (next.data) ingest(next.data);
      // Without a limit every batch is needed: ask for the next one now, so that PostgreSQL loads it
      // (on the other core) while this one is combined.
      if (everyBatch && !next.done) {
        pending = source.next(next.after, batch, everyBatch);
        // Awaited on the next turn; if this batch throws first, its failure must not go unhandled.
        pending.catch(() => {});
      }
      if ((next.anchors.length > 0 && (await run(next))) || next.done) break;
      afterId = next.after;
      scanned += next.scanned;
      if (everyBatch) continue;
      const perTree = count / scanned;
      const needed = perTree > 0 ? Math.ceil(((cap - count) / perTree) * 1.2) : batch * 4;
      batch = Math.max(32, Math.min(needed, batch * 8));
      pending = source.next(afterId, batch);
    }
  }
  if (opts.randomize) shuffle(out);

  // Summaries: every provider of every tree the candidates take resources from (only the used providers for pre-1.29 requests).
  // Loops over the id maps (in id order), not spreads of their iterators: an iterator result per provider was garbage.
  const usedRoots = new IdSet();
  used.forEach((id) => {
    usedRoots.add(rootOfProvider(id));
  });
  const summaries: ProviderSummary[] = [];
  providers.forEach((p) => {
    if (excludeNested ? !used.has(p.id) : !usedRoots.has(p.rootId)) return;
    // Inventories in class id order, as every path shows them.
    summaries.push({ provider: p, inventories: inClassOrder(p.inventories), traits: traitNames.get(p.id) ?? [] });
  });

  return {
    candidates: out,
    count,
    summaries,
    ...names,
  };
}

/** `list` when it is in class id order (the view's lists are), else a sorted copy. */
function inClassOrder(list: readonly TreeInventory[]): readonly TreeInventory[] {
  for (let i = 1; i < list.length; i++) if (list[i - 1].resourceClassId > list[i].resourceClassId) return sortByKey([...list], (inv) => inv.resourceClassId);
  return list;
}

export function emptyResult(rcNames: Map<number, string>): CandidatesResult {
  return {
    candidates: [],
    count: 0,
    summaries: [],
    uuidOf: () => "",
    resourceClassName: (id) => rcNames.get(id)!,
  };
}

/** in_tree roots by group suffix; undefined when one names no provider (no candidates at all). */
export function inTreeRoots(query: CandidatesQuery, names: IdsByName): Map<string, number> | undefined {
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
export const classNamesOf = (names: IdsByName): Map<number, string> => new Map([...names.resourceClasses].map(([name, id]) => [id, name]));
