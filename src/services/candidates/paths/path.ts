/**
 * The answer paths' one interface. A path is a way of answering GET
 * /allocation_candidates; the chooser (chooser.ts) offers each request to
 * the paths in order of preference and the first that takes it answers.
 * Every path gives the same bytes for every request it takes: the contract
 * suite (test/candidates/contract.test.ts) runs the same cases through each
 * path alone and compares them.
 *
 * Paths read one of two sources, and decide on a state of it without
 * awaiting, so the state they decide on is the state they answer from:
 * - over the cloud view (ViewPath): inside the view's read, on the copy as
 *   the request's one statement left it;
 * - over the database (DatabasePath): inside one read-only snapshot, after
 *   the engine's lookup of the request's names and the cloud's shape.
 * Taking a request returns how to answer it; declining returns undefined and
 * leaves everything as it was.
 */
import type { Queryable } from "../../../db/database.js";
import type { CandidatesQuery } from "../../../query/request-groups.js";
import type { AnswerBytesBound } from "../answer-bound.js";
import type { AnswerShape } from "../answer-shape.js";
import type { Candidate } from "../combine.js";
import type { ViewRead } from "../cloud-view.js";
import type { FlatAnswer } from "../flat-answer.js";
import { emptyResult, type CandidatesResult, type EngineOptions, type NamesById } from "../generate.js";
import type { IdsByName } from "../sql/names.js";

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
   * The path knows, before answering, an upper bound on the answer's bytes
   * (answer-bound.ts), to be computed only if the sink asks: an answer known
   * to fit the answer-size bound may leave before it is whole.
   */
  bounded?(atMost: AnswerBytesBound): void;
  /**
   * Forget everything written so far, so the answer can be written again
   * from the start (a read that failed on a standby runs again on the
   * primary); false once some of it has left for the client.
   */
  discard(): boolean;
}

/** One request as every path sees it. */
export interface AnswerRequest {
  query: CandidatesQuery;
  shape: AnswerShape;
  sink: CandidatesSink;
  /** The engine's options: the configured search, the shape, the sink's candidate callback. */
  engine: EngineOptions;
  /** The smaller of the request's limit and max_allocation_candidates (undefined: no cap). */
  limit: number | undefined;
}

/** Answers a request a path took into its sink; false when there can be no candidates (the sink got an empty answer). */
export type Answer = () => Promise<boolean>;

/** A path over the cloud view's copy. */
export interface ViewPath {
  readonly name: "flat-view" | "tree-view";
  readonly over: "view";
  /** Within the view's read, for a request whose names are all known: how this path answers, or undefined. */
  take(read: ViewRead, request: AnswerRequest): Answer | undefined;
}

/** A path over the database, for GET /allocation_candidates and for callers with a transaction of their own. */
export interface DatabasePath {
  readonly name: "flat-source" | "general";
  readonly over: "database";
  /**
   * Within the snapshot `tx`, for a request whose names are all known: how
   * this path finds the candidates (undefined from it: there can be none),
   * or undefined when it does not take the request.
   */
  take(tx: Queryable, query: CandidatesQuery, names: IdsByName, engine: EngineOptions): (() => Promise<CandidatesResult | undefined>) | undefined;
}

export type AnswerPath = ViewPath | DatabasePath;

export type CandidatesPath = AnswerPath["name"];

/** The engine's result into `sink` (none: an empty answer). */
export function emit(result: CandidatesResult | undefined, sink: CandidatesSink): void {
  if (!result) {
    sink.end(emptyResult(new Map()));
    return;
  }
  // With randomize the engine shuffles and returns the list instead of calling onCandidate.
  for (const c of result.candidates) sink.candidate(c, result);
  sink.end(result);
}
