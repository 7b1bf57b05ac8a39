/**
 * The allocation candidates service: the one entry point of GET
 * /allocation_candidates (answer), and the functions through which callers
 * select candidates inside a transaction of their own, such as POST /claims
 * (candidatesInPreferenceOrder, candidatesWithSummaries).
 *
 * Every request first brings the cloud kept in memory (cloud-view.ts) up to
 * date from the change feed, by one statement that also looks up the
 * request's names; then, on that one state, the first path that takes the
 * request answers it:
 * - "flat-view" (flat-answer.ts): on a flat cloud, one pass over the copy's
 *   providers, handed to the sink whole.
 * - "tree-view": on a cloud with trees or sharing providers, the general
 *   plan (general-source.ts) over the copy's trees (view-tree-reads.ts).
 * - the engine (engine.ts), in one read-only repeatable-read snapshot of the
 *   database, for the rest: a request naming a class or trait that does not
 *   exist (unknown-names.ts says whether Placement refuses it), a
 *   resourceless group on a flat cloud, and a cloud too large to copy. Its
 *   name lookup sees the shape again and picks its source, "flat-source"
 *   (flat-source.ts) on a flat cloud, "general" otherwise.
 * Either way the answer leaves through one sink (CandidatesSink), candidate
 * by candidate as the general plan finds them (so the body of a large answer
 * leaves while the search goes on), or whole from the flat pass.
 *
 * Callers with a transaction of their own (POST /claims) go straight to the
 * engine: every read goes through their `tx`, so the candidates are those of
 * their snapshot, never the copy's. Preference order is the order GET
 * /allocation_candidates answers in without randomize (trees in id order,
 * depth-first); `query.params.limit` stops the search early. Unknown names
 * throw the same 400 errors as the GET.
 */
import { setImmediate as turn } from "node:timers/promises";
import type { Config } from "../../config.js";
import type { Db, Queryable } from "../../db/database.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import { CloudView, type CloudViewOptions, type ViewNames, type ViewRead } from "./cloud-view.js";
import type { ViewTrees } from "./cloud-trees.js";
import type { Candidate } from "./combine.js";
import { findCandidates, generalCandidates, type EngineOptions, type EnginePath } from "./engine.js";
import { flatAnswer, flatAnswerTakes, type FlatAnswer } from "./flat-answer.js";
import { emptyResult, type CandidatesResult, type NamesById } from "./generate.js";
import type { IdsByName } from "./sql.js";
import { groupTraits, namesKnown } from "./unknown-names.js";
import { viewTreeReads } from "./view-tree-reads.js";

/** "flat-view" and "tree-view" answer from the cloud view's copy, the engine's paths from the database. */
export type CandidatesPath = "flat-view" | "tree-view" | EnginePath;

/** Where an answer goes: the route's body writer, or anything else that renders candidates. */
export interface CandidatesSink {
  /** One allocation request from the engine, in answer order. */
  candidate(candidate: Candidate, names: NamesById): void;
  /** The engine is done: the summaries of every provider the candidates use. */
  end(result: CandidatesResult): void;
  /** A whole flat answer (each candidate one provider taking every group's resources). */
  flat(answer: FlatAnswer): void;
  /**
   * Resolves when the answer may go on (the general plan over the view waits
   * on it between batches): after a turn of the event loop, and once the
   * answer streams, when little enough of it waits to be sent. Without it, a
   * turn of the event loop.
   */
  room?(): Promise<void>;
  /**
   * Forget everything written so far, so the answer can be written again
   * from the start (a read that failed on a standby runs again on the
   * primary); false once some of it has left for the client.
   */
  discard(): boolean;
}

export type CandidatesConfig = Pick<
  Config,
  | "PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES"
  | "PLACEMENT_MAX_ALLOCATION_CANDIDATES"
  | "PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY"
  | "PLACEMENT_DB_POOLER"
>;

/** What the configuration says of how the engine searches: read here only, for GET /allocation_candidates and POST /claims alike. */
export function engineSettings(config: CandidatesConfig): Pick<EngineOptions, "randomize" | "maxCandidates" | "strategy"> {
  return {
    randomize: config.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
    maxCandidates: config.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
    strategy: config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
  };
}

export interface CandidatesServiceOptions {
  /**
   * Tests only: answer every request by this path (a request it cannot take
   * fails). The differential test forces each path over the same clouds.
   */
  forcePath?: CandidatesPath;
  /** Tests only: how old the view's copy may get before it is read whole again, and how many providers it may hold (cloud-view.ts). */
  view?: Pick<CloudViewOptions, "fullReadEveryMs" | "maxProviders" | "maxTreeProviders">;
}

/** One claimable candidate: what to allocate from which provider, and which providers serve each group. */
export interface PreferredCandidate {
  /** In the answer's order: providers in order of first appearance, each provider's classes as the request gives them. */
  allocations: Array<{ providerId: number; providerUuid: string; resourceClassId: number; resourceClass: string; amount: number }>;
  /** Request group suffix ("" for the unsuffixed group) to the uuids of the providers serving it. */
  mappings: Map<string, string[]>;
}

export class CandidatesService {
  private readonly view: CloudView;

  constructor(
    private readonly db: Db,
    private readonly config: CandidatesConfig,
    private readonly options: CandidatesServiceOptions = {},
  ) {
    // A transaction pooler gives each statement any server connection: a statement prepared on one is unknown
    // (or, named alike, already there) on the next, so there every statement is unnamed.
    const named = config.PLACEMENT_DB_POOLER !== "transaction";
    this.view = new CloudView(db, { ...options.view, namedStatements: named });
  }

  /**
   * Answers GET /allocation_candidates into `sink`; `nestedAware` is
   * microversion 1.29's. Returns the path that answered (undefined when the
   * name lookups alone showed there is none).
   */
  async answer(query: CandidatesQuery, nestedAware: boolean, sink: CandidatesSink): Promise<CandidatesPath | undefined> {
    const forced = this.options.forcePath;
    const opts = this.engineOptions(nestedAware, sink);
    if (forced === undefined || forced === "flat-view" || forced === "tree-view") {
      const randomize = this.config.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES;
      const taken = await this.view.read(viewNames(query), (read) => fromView(read, query, forced, { limit: this.cap(query), randomize }));
      if (taken?.flat) {
        sink.flat(taken.flat);
        return "flat-view";
      }
      if (taken?.trees) {
        const between = sink.room ? () => sink.room!() : () => turn();
        const result = await generalCandidates(viewTreeReads(taken.trees, taken.classNames, between), query, taken.names, opts);
        this.emit(result, sink);
        return result ? "tree-view" : undefined;
      }
      // An unknown name goes to the engine, which knows whether Placement refuses it (unknown-names.ts).
      if (forced && !taken?.unknownName) throw new Error(`the ${forced} path cannot answer this request (a cloud too large to copy${forced === "flat-view" ? ", or not flat" : ""})`);
    }
    const { result, path } = await this.db.transaction(
      (tx) => findCandidates(tx, query, { ...opts, path: forced === "flat-view" || forced === "tree-view" ? undefined : forced }),
      // One snapshot: the narrowing queries and the tree loads must agree.
      { isolationLevel: "repeatable read", accessMode: "read only" },
    );
    this.emit(result, sink);
    return path;
  }

  /** The smaller of the request's limit and max_allocation_candidates (undefined: no cap). */
  private cap(query: CandidatesQuery): number | undefined {
    const max = this.config.PLACEMENT_MAX_ALLOCATION_CANDIDATES;
    const cap = Math.min(query.params.limit ?? Infinity, max > 0 ? max : Infinity);
    return Number.isFinite(cap) ? cap : undefined;
  }

  private engineOptions(nestedAware: boolean, sink: CandidatesSink): EngineOptions {
    return { ...engineSettings(this.config), nestedAware, onCandidate: sink.candidate };
  }

  /** The engine's result into `sink` (none: an empty answer). */
  private emit(result: CandidatesResult | undefined, sink: CandidatesSink): void {
    if (!result) {
      sink.end(emptyResult(new Map()));
      return;
    }
    // With randomize the engine shuffles and returns the list instead of calling onCandidate.
    for (const c of result.candidates) sink.candidate(c, result);
    sink.end(result);
  }
}

/** The trait and aggregate names the view looks up for `query` (as the engine's lookup, sql.ts lookupNames). */
function viewNames(query: CandidatesQuery): ViewNames {
  const { groups, params } = query;
  return {
    traits: unique([...params.rootRequired, ...params.rootForbidden, ...groups.flatMap(groupTraits)]),
    aggregates: unique(groups.flatMap((g) => [...g.aggregates.memberOf.flat(), ...g.aggregates.forbidden])),
  };
}

/** What the view can answer from one read: a flat answer whole, or the trees the general plan reads (with the request's names). */
type FromView =
  | { flat: FlatAnswer; trees?: undefined }
  | { flat?: undefined; trees: ViewTrees; names: IdsByName; classNames: Map<number, string> }
  | { flat?: undefined; trees?: undefined; unknownName: true };

/**
 * Runs inside the view's read (one state of the copy): the flat answer, or
 * what the general plan needs of this state; neither for a request the
 * view does not take (an unknown name, or a resourceless group on a flat
 * cloud), which the engine then answers from the database.
 */
function fromView(read: ViewRead, query: CandidatesQuery, forced: CandidatesPath | undefined, flatOpts: { limit: number | undefined; randomize: boolean }): FromView | undefined {
  if (!namesKnown(query, read.names)) return { unknownName: true };
  // A flat cloud is the flat pass's (but when a test forces the trees onto it).
  if (forced === "flat-view" || (forced === undefined && read.flat)) {
    return read.flat && flatAnswerTakes(query) ? { flat: flatAnswer(read, query, flatOpts) } : undefined;
  }
  const names = { ...read.names, treeRoots: new Map<string, number>() };
  for (const g of query.groups) {
    const root = g.inTree ? read.byUuid.get(g.inTree)?.rootId : undefined;
    if (g.inTree && root) names.treeRoots.set(g.inTree, root);
  }
  return { trees: read.trees(), names, classNames: read.classNames };
}

/**
 * The engine's whole answer to `query` through the caller's `tx`: the
 * candidates in preference order (unless `opts.onCandidate` takes them) and
 * the summaries of the providers they use (POST /claims weighs them).
 */
export async function candidatesWithSummaries(tx: Queryable, query: CandidatesQuery, opts: EngineOptions): Promise<CandidatesResult> {
  return (await findCandidates(tx, query, opts)).result;
}

/** The candidates of `query` in preference order, every read through the caller's `tx` (see the header). */
export async function candidatesInPreferenceOrder(
  tx: Queryable,
  query: CandidatesQuery,
  opts: { nestedAware?: boolean; maxCandidates?: number; strategy?: "depth-first" | "breadth-first" } = {},
): Promise<PreferredCandidate[]> {
  const out: PreferredCandidate[] = [];
  await findCandidates(tx, query, {
    nestedAware: opts.nestedAware ?? true,
    randomize: false,
    maxCandidates: opts.maxCandidates ?? -1,
    strategy: opts.strategy ?? "depth-first",
    onCandidate: (c, names) => out.push(preferred(c, names)),
  });
  return out;
}

function preferred(c: Candidate, names: NamesById): PreferredCandidate {
  const providers: number[] = [];
  for (const rr of c.resources) if (!providers.includes(rr.providerId)) providers.push(rr.providerId);
  const allocations = providers.flatMap((p) =>
    c.resources
      .filter((rr) => rr.providerId === p)
      .map((rr) => ({
        providerId: p,
        providerUuid: names.uuidOf(p),
        resourceClassId: rr.resourceClassId,
        resourceClass: names.resourceClassName(rr.resourceClassId),
        amount: rr.amount,
      })),
  );
  return { allocations, mappings: new Map(c.groups.map((o) => [o.suffix, o.providers.map(names.uuidOf)])) };
}
