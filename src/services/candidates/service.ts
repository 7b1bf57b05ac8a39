/**
 * The allocation candidates service: the one entry point of GET
 * /allocation_candidates (answer) and of callers that select candidates
 * inside a transaction of their own, such as POST /claims
 * (candidatesInPreferenceOrder).
 *
 * It chooses the plan once per request, from the request and the cloud's
 * shape (cloud-shape.ts). Every request first brings the cloud kept in
 * memory (cloud-view.ts) up to date from the change feed, by one statement
 * that also looks up the request's names; then, on that one state:
 * - "flat-view" (flat-answer.ts): on a flat cloud, one pass over its
 *   providers; the body is written from it at once.
 * - "tree-view": on a cloud with trees or sharing providers, the general
 *   plan (general-source.ts) over the copy's trees (view-tree-reads.ts).
 * The engine (engine.ts), in one read-only repeatable-read snapshot of the
 * database, answers the rest: a request naming a class or trait that does
 * not exist (unknown-names.ts says whether Placement refuses it), a
 * resourceless group on a flat cloud, and a cloud too large to copy; its
 * name lookup sees the shape again and picks its source, "flat-source"
 * (flat-source.ts) on a flat cloud, "general" otherwise. Either way the
 * answer leaves through one sink (CandidatesSink), candidate by candidate as
 * the general plan finds them or whole from the flat pass.
 *
 * Where the time goes (CPU profiles of the server under the Nova-style loop,
 * `npm run bench -- claims --mode candidates --limit 1000`, and of single
 * large answers; the figures are in the README's bench section):
 * - A flat answer of a thousand candidates or more: writing the body
 *   (routes/flat-candidates-body.ts copies whole pieces kept per provider)
 *   and sending it. The pass over the copy is a few lookups per provider, and
 *   PostgreSQL's part is one small statement (the names, and the rows of the
 *   providers changed since the last request); before the copy, PostgreSQL's
 *   aggregation over every inventory row was the largest part.
 * - A small flat answer (tens of candidates) is a fixed cost per request
 *   spread over the stack: node's HTTP handling and hono (what GET / costs
 *   too), the one statement, and the client, server and PostgreSQL waking
 *   each other on two cores. No part of the route itself stands out.
 * - The loop as a whole is bound by CPU, not by waits. On the server the
 *   largest part is the kernel's loopback send of each answer of a thousand
 *   candidates (socket writes), then writing the body; the pass over the copy
 *   and the collector are small. PostgreSQL's share is mostly the PUT: its
 *   triggers (the stored usage, the change feed's notes and, at commit, its
 *   sequencing with each provider's state); on the server the PUT is five
 *   round trips (BEGIN, three named statements, COMMIT) through drizzle. The
 *   WAL flush the commit waits for under the feed's lock (drizzle/0010) is
 *   short on this disk next to that CPU. The client's reading of each answer
 *   takes CPU from the same two cores (bench/claims.ts parses only what its
 *   pick reads).
 * - A large nested answer (thousands of candidates) from the copy's trees:
 *   writing the candidates (routes/candidate-writer.ts) is the largest part,
 *   about a quarter of the server's CPU, then the kernel's send of the body,
 *   planning each batch (plan.ts), combining (combine.ts) and garbage
 *   collection (planning, each option and each candidate allocate); the body
 *   leaves while the search goes on, which bounds the peak memory. Read from
 *   the database, the trees kept the engine waiting: before the first batch
 *   for the lookups and the first load, then for each load, which took
 *   PostgreSQL longer than the engine took to combine the batch before; from
 *   the copy nothing waits. Over a copy of tens of thousands of providers an
 *   answer of tens of thousands of candidates sets off a full collection,
 *   whose marking costs by the copy's objects, not its bytes (hence the
 *   copy's shared sets and lists, cloud-view.ts and cloud-trees.ts), and
 *   each batch's garbage sets off scavenges (hence the planner's lists
 *   without a pair per provider, plan.ts, and options made in loops,
 *   combine.ts).
 * - A cloud too large to copy (more than 60,000 providers in trees) is read
 *   from the database batch by batch, and its huge answers keep both cores
 *   busy: the engine and the body on one, PostgreSQL's loads (each longer
 *   than the engine's work on the batch before), the collector's helpers
 *   and the client reading the body on the other; and the main thread also
 *   parses each batch's texts.
 *
 * For POST /claims (issue 13), with the caller's own transaction:
 *   candidatesInPreferenceOrder(tx: Queryable, query: CandidatesQuery,
 *     opts: { nestedAware?: boolean (default true); maxCandidates?: number;
 *             strategy?: "depth-first" | "breadth-first" })
 *     : Promise<PreferredCandidate[]>
 * or service.inPreferenceOrder(tx, query, { nestedAware }) with the app's
 * configured cap and strategy; candidatesWithSummaries(tx, query, EngineOptions)
 * gives the engine's whole result (candidates and provider summaries). Preference order is the order GET
 * /allocation_candidates answers in without randomize (trees in id order,
 * depth-first); `query.params.limit` stops the search early. Unknown names
 * throw the same 400 errors as the GET. Every read goes through `tx`, so the
 * candidates are those of the caller's snapshot.
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
   * The cloud view this service answers from, brought up to date now (CloudView.read): for
   * readers that explain an answer from the same state (services/explain/).
   */
  readView<T>(wanted: ViewNames, use: (read: ViewRead) => T): Promise<T | undefined> {
    return this.view.read(wanted, use);
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

  /** candidatesInPreferenceOrder with this app's cap and strategy. */
  inPreferenceOrder(tx: Queryable, query: CandidatesQuery, opts: { nestedAware?: boolean } = {}): Promise<PreferredCandidate[]> {
    return candidatesInPreferenceOrder(tx, query, {
      ...opts,
      maxCandidates: this.config.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
      strategy: this.config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
    });
  }

  /** The smaller of the request's limit and max_allocation_candidates (undefined: no cap). */
  private cap(query: CandidatesQuery): number | undefined {
    const max = this.config.PLACEMENT_MAX_ALLOCATION_CANDIDATES;
    const cap = Math.min(query.params.limit ?? Infinity, max > 0 ? max : Infinity);
    return Number.isFinite(cap) ? cap : undefined;
  }

  private engineOptions(nestedAware: boolean, sink: CandidatesSink): EngineOptions {
    return {
      nestedAware,
      randomize: this.config.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
      maxCandidates: this.config.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
      strategy: this.config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
      onCandidate: sink.candidate,
    };
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
export function viewNames(query: CandidatesQuery): ViewNames {
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
