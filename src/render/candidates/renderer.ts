/**
 * The one interface a candidates renderer implements: what writes the JSON
 * of one GET /allocation_candidates answer. The body (body.ts: the
 * service's sink, the response, the bound, streaming) talks to a renderer
 * through this and nothing else. Two implement it:
 * - FastRenderer (fast.ts): bytes from pieces encoded once and kept in the
 *   render cache (cache.ts); what GET /allocation_candidates uses;
 * - ReferenceRenderer (reference.ts): the answer built as data and given to
 *   JSON.stringify; the contract suite's oracle for every shape, and what
 *   the fast renderer hands a flat answer whose names need escaping.
 * A renderer is made for one request (its shape and query) and writes one
 * answer at a time.
 *
 * The calls, in this order:
 * 1. `open(w)`: an answer starts, written into `w`. Once, first; again
 *    only after the body dropped what was written (a read that failed on a
 *    standby runs again on the primary), with a new writer: everything the
 *    renderer held for the answer before is forgotten.
 * 2. Then one of:
 *    - the engine's answer: `candidate` for each allocation request in
 *      answer order (none when there are none), then `summaries` once with
 *      the engine's result (the summaries of every provider the candidates
 *      use, in its order);
 *    - a flat answer (the cloud view's: each candidate one provider taking
 *      every group's resources): `flat` once with the whole answer, its
 *      requests and its summaries.
 * 3. `finish()`: once, last: the body is whole in `w`.
 * A renderer may write into `w` at any of these calls (FastRenderer writes
 * as it goes, so a large answer can leave while it is still being found;
 * ReferenceRenderer writes everything at finish). It never reads `w` back
 * except for what it wrote in this answer, and keeps nothing of `w` after
 * finish.
 */
import type { BodyWriter } from "../../http/body-writer.js";
import type { AnswerLengths } from "../../services/candidates/answer-bound.js";
import type { Candidate } from "../../services/candidates/combine.js";
import type { FlatAnswer } from "../../services/candidates/flat-answer.js";
import type { CandidatesResult, NamesById } from "../../services/candidates/generate.js";

export interface CandidatesRenderer {
  /** An answer starts, written into `w` (see the order above). */
  open(w: BodyWriter): void;
  /** One allocation request of the engine's answer, with the names it is shown by. */
  candidate(candidate: Candidate, names: NamesById): void;
  /** The engine is done: the summaries of the providers its candidates use. */
  summaries(result: CandidatesResult): void;
  /** A whole flat answer, requests and summaries. */
  flat(answer: FlatAnswer): void;
  /** The answer is complete: closes the body. */
  finish(): void;
  /** What the pieces of this renderer's answers weigh (lengths.ts), for an upper bound on an answer's bytes; at any time. */
  lengths(): AnswerLengths;
}
