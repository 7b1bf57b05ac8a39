/**
 * The body of an allocation candidates answer: the service's sink
 * (CandidatesSink), which hands what the service finds to a renderer
 * (renderer.ts: FastRenderer for GET /allocation_candidates, the plain
 * ReferenceRenderer for the contract suite) and makes the response body of
 * what the renderer wrote. The body owns the writer (BodyWriter, in the
 * render cache's buffers), the answer-size bound (budget.ts), streaming and
 * when the buffers may be written again; the renderer owns the JSON.
 *
 * The writer is made with the answer's first candidate or its end: bytes,
 * not strings, because a huge answer (tens of thousands of nested
 * candidates) kept as strings until the end grows the heap by several times
 * its size; written as it comes, each piece is garbage at once and the
 * bytes sit outside the heap in 64 KB chunks. A flat answer (cloud view) is
 * written at once, into a writer sized to hold it in one chunk, and always
 * leaves whole. Under PLACEMENT_MAX_ANSWER_BYTES (the default) the chunks
 * are held until the answer is whole, and an answer that passes it is
 * refused before any of it leaves, unless the path showed that the answer
 * cannot pass it (bounded): then it leaves as it is written (see respond).
 */
import { setImmediate as turn } from "node:timers/promises";
import { BodyWriter, type LiveBody } from "../../http/body-writer.js";
import type { Candidate } from "../../services/candidates/combine.js";
import type { AnswerBytesBound } from "../../services/candidates/answer-bound.js";
import type { CandidatesResult } from "../../services/candidates/engine.js";
import type { FlatAnswer } from "../../services/candidates/flat-answer.js";
import type { NamesById } from "../../services/candidates/generate.js";
import type { CandidatesSink } from "../../services/candidates/paths/path.js";
import type { AnswerBound, AnswerBudget } from "./budget.js";
import type { RenderCache } from "./cache.js";
import type { CandidatesRenderer } from "./renderer.js";

export class CandidatesBody implements CandidatesSink {
  /** The answer's writer, made with its first write (the renderer is opened on it then). */
  private writer?: BodyWriter;
  /** The answer is a flat one: it leaves whole, never streamed. */
  private whole = false;
  private count = 0;
  private large?: () => void;
  /** The path's upper bound on the answer's bytes (bounded), if it gave one. */
  private atMost?: AnswerBytesBound;
  /** Some of the body has left (respond started the stream): it can no longer be discarded. */
  private live = false;
  private liveBody?: LiveBody;
  /** The most bytes the body may have (none when undefined): past it the answer is refused with AnswerTooLarge. */
  private readonly bound?: AnswerBound;

  /** `budget`: the app's answer-size bound (none: answers are not bounded). */
  constructor(
    private readonly renderer: CandidatesRenderer,
    private readonly cache: RenderCache,
    budget?: AnswerBudget,
  ) {
    this.bound = budget?.bound();
  }

  /** Allocation requests written so far. */
  get written(): number {
    return this.count;
  }

  /** Writes one allocation request (a field, so the engine can take it as its callback). */
  readonly candidate = (cand: Candidate, names: NamesById): void => {
    if (this.writer === undefined) this.open();
    this.count++;
    this.renderer.candidate(cand, names);
  };

  end(result: CandidatesResult): void {
    const w = this.writer ?? this.open();
    this.renderer.summaries(result);
    this.renderer.finish();
    w.within();
  }

  flat(answer: FlatAnswer): void {
    this.count = answer.anchors.length;
    this.whole = true;
    // About 512 bytes a candidate: one chunk holds the answer, which finish() then gives as it is.
    const w = this.open(1024 + answer.anchors.length * 512);
    this.renderer.flat(answer);
    this.renderer.finish();
    // Checked before the body is joined into one buffer.
    w.within();
  }

  bounded(atMost: AnswerBytesBound): void {
    this.atMost = atMost;
  }

  /** A turn of the event loop, and once the body streams, room in its queue (LiveBody.room). */
  room(): Promise<void> {
    return this.liveBody ? this.liveBody.room() : turn();
  }

  discard(): boolean {
    if (this.live) return false;
    // Nothing written has been sent. The next write makes a new writer (which registers the stream's size trigger again) and opens the renderer on it.
    this.bound?.release();
    this.recycle();
    this.whole = false;
    this.atMost = undefined;
    this.count = 0;
    return true;
  }

  /**
   * The response is sent (or will never be): the body's buffers go back to
   * be written again. Nothing this body wrote may be read after.
   */
  recycle(): void {
    this.writer?.recycle();
    this.writer = undefined;
  }

  /**
   * The response body of `answering` (the service writing into this sink): a
   * buffer when the answer is complete before its allocation requests pass
   * STREAM_FROM_BYTES; else a stream that starts then, while the engine goes
   * on, so the client (or the kernel's copy) reads the first megabytes on the
   * other core instead of after the last candidate. Until the stream starts
   * nothing is sent, so a bad request or a failure found early is an ordinary
   * error (this rejects); a failure after that aborts the stream (`onError`
   * hears why) and the client sees a broken body, never a short one.
   *
   * With a bound the body starts to leave before it is whole only when the
   * path gave an upper bound on the answer's bytes (bounded) that is within
   * the bound, asked once the answer passes STREAM_FROM_BYTES: such an answer
   * can never be refused for its size. Otherwise it leaves whole, and an
   * answer that passes the bound is refused (this rejects with
   * AnswerTooLarge) while nothing of it has been sent, and what was written
   * is dropped. The bound is what the answer can cost in memory; one that
   * leaves early holds only what waits to be sent. A flat answer is bounded
   * by the number of providers: it always leaves whole.
   */
  async respond(answering: Promise<unknown>, onError: (error: Error) => void): Promise<Buffer<ArrayBuffer> | ReadableStream<Uint8Array>> {
    const whole = answering.then(() => true);
    whole.catch(() => {}); // a failure is answered by the race below, or through the stream
    const large = new Promise<boolean>((resolve) => (this.large = () => resolve(false)));
    if (this.writer && !this.whole) this.writer.whenLarger(STREAM_FROM_BYTES).then(this.large);
    let complete: boolean;
    try {
      complete = await Promise.race([whole, large]);
      if (!complete && !this.mayLeave()) complete = await whole;
    } catch (error) {
      // Nothing was sent, and the service is done writing: the buffers can be written again.
      this.recycle();
      throw error;
    } finally {
      // A bounded answer is whole, refused or leaving here: what it counted is given back.
      this.bound?.release();
    }
    const w = this.writer ?? this.open();
    if (complete) return this.whole || w.size <= STREAM_ABOVE_BYTES ? w.finish() : w.stream();
    this.live = true;
    const live = w.startStream();
    this.liveBody = live;
    answering.then(
      () => live.end(),
      (error: Error) => {
        onError(error);
        live.fail(error);
      },
    );
    return live.stream;
  }

  /**
   * Whether the answer, passing STREAM_FROM_BYTES, may leave before it is
   * whole: always without a bound; with one, when the path's upper bound on
   * its bytes is within it (the bound's chunks then stop counting).
   */
  private mayLeave(): boolean {
    const bound = this.bound;
    if (bound === undefined) return true;
    if (this.atMost === undefined || this.atMost(this.renderer.lengths(), bound.bytes) > bound.bytes) return false;
    bound.leaving();
    return true;
  }

  /** A new writer for the answer (`firstChunkBytes`: what it is expected to hold), with the renderer opened on it. */
  private open(firstChunkBytes?: number): BodyWriter {
    const w = new BodyWriter(firstChunkBytes, undefined, this.cache.buffers, this.bound);
    this.writer = w;
    if (this.large && !this.whole) w.whenLarger(STREAM_FROM_BYTES).then(this.large);
    this.renderer.open(w);
    return w;
  }
}

/** Above this size a finished body is streamed chunk by chunk rather than copied into one buffer. */
const STREAM_ABOVE_BYTES = 4 * 1024 * 1024;
/**
 * Without a bound, past this many bytes of allocation requests the body
 * starts to leave while the engine goes on (see respond): on two cores the
 * client reads the first megabytes while the rest is found, and sent chunks
 * are dropped instead of piling up. Smaller answers go whole, with a
 * Content-Length.
 */
const STREAM_FROM_BYTES = 1024 * 1024;
