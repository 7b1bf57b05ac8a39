/**
 * The allocation candidates service: the one entry point of GET
 * /allocation_candidates and of POST /claims (answer, which claims call in
 * preference order into a CollectingSink), and candidatesInPreferenceOrder for
 * callers that select candidates inside a transaction of their own.
 *
 * Every request first brings the cloud kept in memory (cloud-view.ts) up to
 * date from the change feed, by one statement that also looks up the
 * request's names; then, on that one state, the first answer path that
 * takes the request answers it (paths/, in the order of paths/chooser.ts):
 * - "flat-view" (flat-answer.ts): on a flat cloud, one pass over the copy's
 *   providers, handed to the sink whole.
 * - "tree-view": on a cloud with trees or sharing providers, the general
 *   plan (general-source.ts) over the copy's trees (view-tree-reads.ts).
 * - the database's paths through the engine (engine.ts), in one read-only
 *   repeatable-read snapshot of the database, for the rest: a request
 *   naming a class or trait that does not exist (unknown-names.ts says
 *   whether Placement refuses it), a resourceless group on a flat cloud,
 *   and a cloud too large to copy. Its name lookup sees the shape again:
 *   "flat-source" (flat-source.ts) takes a flat cloud, "general" any other.
 * Either way the answer leaves through one sink (CandidatesSink), candidate
 * by candidate as the general plan finds them (so the body of a large answer
 * leaves while the search goes on), or whole from the flat pass.
 *
 * Callers with a transaction of their own go straight to the
 * engine (candidatesInPreferenceOrder): every read goes through their `tx`, so the candidates are those of
 * their snapshot, never the copy's. Preference order is the order GET
 * /allocation_candidates answers in without randomize (trees in id order,
 * depth-first); `query.params.limit` stops the search early. Unknown names
 * throw the same 400 errors as the GET.
 */
import type { Config } from "../../config.js";
import type { Db, Queryable } from "../../db/database.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import type { AnswerShape } from "./answer-shape.js";
import { CloudView, type CloudViewOptions, type ViewNames, type ViewRead } from "./cloud-view.js";
import type { Candidate } from "./combine.js";
import { findCandidates, type EngineOptions } from "./engine.js";
import type { NamesById } from "./generate.js";
import { databasePaths, firstTaking, PREFERENCE, viewPaths } from "./paths/chooser.js";
import { emit, type AnswerPath, type AnswerRequest, type CandidatesPath, type CandidatesSink, type DatabasePath, type ViewPath } from "./paths/path.js";
import { groupTraits, namesKnown } from "./unknown-names.js";

export type { CandidatesPath, CandidatesSink } from "./paths/path.js";

export type CandidatesConfig = Pick<
  Config,
  | "PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES"
  | "PLACEMENT_MAX_ALLOCATION_CANDIDATES"
  | "PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY"
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
   * The answer paths, in order of preference (default: paths/chooser.ts's
   * PREFERENCE). Tests pass one path alone to run it over their cases.
   */
  paths?: readonly AnswerPath[];
  /** How old the view's copy may get before it is read whole again, and how many providers it may hold (cloud-view.ts). */
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
  /** The service's paths (see CandidatesServiceOptions), split once by what they answer from. */
  private readonly fromView: readonly ViewPath[];
  private readonly fromDatabase: readonly DatabasePath[];

  constructor(
    private readonly db: Db,
    private readonly config: CandidatesConfig,
    options: CandidatesServiceOptions = {},
  ) {
    this.view = new CloudView(db, options.view);
    const paths = options.paths ?? PREFERENCE;
    this.fromView = viewPaths(paths);
    this.fromDatabase = databasePaths(paths);
  }

  /**
   * The cloud view this service answers from, brought up to date now (CloudView.read): for
   * readers that explain an answer from the same state (services/explain/).
   */
  readView<T>(wanted: ViewNames, use: (read: ViewRead) => T): Promise<T | undefined> {
    return this.view.read(wanted, use);
  }

  /**
   * Answers GET /allocation_candidates into `sink`, in the answer's `shape`.
   * Returns the path that answered (undefined when the name lookups alone
   * showed there is none). Throws when none of the service's paths takes the
   * request (only a list without the general path can leave one untaken).
   * `order` "preference" answers in preference order whatever
   * randomize_allocation_candidates says (POST /claims weighs the candidates itself).
   */
  async answer(query: CandidatesQuery, shape: AnswerShape, sink: CandidatesSink, order: AnswerOrder = "configured"): Promise<CandidatesPath | undefined> {
    const settings = engineSettings(this.config);
    const request: AnswerRequest = {
      query,
      shape,
      sink,
      engine: { ...settings, randomize: order === "configured" && settings.randomize, shape, onCandidate: sink.candidate },
      limit: this.cap(query),
    };
    if (this.fromView.length > 0) {
      // An unknown name goes to the engine, which knows whether Placement refuses it (unknown-names.ts).
      const chosen = await this.view.read(viewNames(query), (read) =>
        namesKnown(query, read.names) ? firstTaking(this.fromView, (p) => p.take(read, request)) : undefined,
      );
      if (chosen) return (await chosen.taken()) ? chosen.path.name : undefined;
    }
    const { result, path } = await this.db.transaction(
      (tx) => findCandidates(tx, query, request.engine, this.fromDatabase),
      // One snapshot: the narrowing queries and the tree loads must agree.
      { isolationLevel: "repeatable read", accessMode: "read only" },
    );
    emit(result, sink);
    return path;
  }

  /** The smaller of the request's limit and max_allocation_candidates (undefined: no cap). */
  private cap(query: CandidatesQuery): number | undefined {
    const max = this.config.PLACEMENT_MAX_ALLOCATION_CANDIDATES;
    const cap = Math.min(query.params.limit ?? Infinity, max > 0 ? max : Infinity);
    return Number.isFinite(cap) ? cap : undefined;
  }
}

/** "configured": as randomize_allocation_candidates says; "preference": the order GET /allocation_candidates answers in without randomize. */
export type AnswerOrder = "configured" | "preference";

/** The trait and aggregate names the view looks up for `query` (as the engine's lookup, sql/names.ts lookupNames). */
export function viewNames(query: CandidatesQuery): ViewNames {
  const { groups, params } = query;
  return {
    traits: unique([...params.rootRequired, ...params.rootForbidden, ...groups.flatMap(groupTraits)]),
    aggregates: unique(groups.flatMap((g) => [...g.aggregates.memberOf.flat(), ...g.aggregates.forbidden])),
  };
}

/** The candidates of `query` in preference order, every read through the caller's `tx` (see the header). */
export async function candidatesInPreferenceOrder(
  tx: Queryable,
  query: CandidatesQuery,
  opts: { shape?: Pick<AnswerShape, "tree">; maxCandidates?: number; strategy?: "depth-first" | "breadth-first" } = {},
): Promise<PreferredCandidate[]> {
  const out: PreferredCandidate[] = [];
  await findCandidates(tx, query, {
    shape: opts.shape ?? { tree: true },
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
