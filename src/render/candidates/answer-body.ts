/**
 * What GET /allocation_candidates needs of a body renderer: the sink the
 * candidates service writes the answer into, the response body it becomes,
 * and when the memory it wrote in may be used again. The fast renderer
 * (body.ts) and the plain one (reference.ts) both are one, so either can
 * answer a request and the contract suite can hold one against the other.
 */
import type { CandidatesSink } from "../../services/candidates/paths/path.js";

export interface AnswerBody extends CandidatesSink {
  /** Allocation requests written so far. */
  readonly written: number;
  /**
   * The response body once `answering` (the service writing into this body)
   * allows: rejects with the service's error, or with AnswerTooLarge or
   * AnswersBusy past the answer-size bound, while nothing has been sent;
   * `onError` hears a failure after the body started to leave.
   */
  respond(answering: Promise<unknown>, onError: (error: Error) => void): Promise<Buffer<ArrayBuffer> | ReadableStream<Uint8Array>>;
  /** The response is sent (or never will be): nothing the body wrote is read after this. */
  recycle(): void;
}
