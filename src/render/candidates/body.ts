/**
 * The body of an allocation candidates answer, as the service's sink
 * (CandidatesSink). From the engine, each allocation request is written as
 * bytes the moment it is found, then the summaries; see BodyWriter for why
 * bytes: a huge answer (tens of thousands of nested candidates) kept as
 * strings until the end grows the heap by several times its size; written as
 * it comes, each piece is garbage at once and the bytes sit outside the heap
 * in 64 KB chunks. From the flat answer (cloud view), the whole body at once
 * (flat-body.ts). Under PLACEMENT_MAX_ANSWER_BYTES (the default)
 * the chunks are held until the answer is whole, and an answer that passes
 * it is refused before any of it leaves (see respond).
 */
import { setImmediate as turn } from "node:timers/promises";
import { BodyBuffers } from "../../http/body-buffers.js";
import { ascii, BodyWriter, type Bound, type LiveBody } from "../../http/body-writer.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { Candidate } from "../../services/candidates/combine.js";
import type { CandidatesResult } from "../../services/candidates/engine.js";
import { IdMap } from "../../services/candidates/id-map.js";
import type { FlatAnswer } from "../../services/candidates/flat-answer.js";
import type { NamesById } from "../../services/candidates/generate.js";
import { AnswersBusy, AnswerTooLarge } from "../../services/errors.js";
import { ARRAY_CLOSE, BODY_CLOSE, CLOSE, COMMA, REQUESTS_OPEN, SUMMARIES_OPEN } from "./pieces.js";
import type { AnswerShape } from "../../services/candidates/answer-shape.js";
import { candidateWriter, ProviderPieces, writeQuoted, writeResourcesOpen, type UuidArena, type UuidPieces } from "./candidate-writer.js";
import type { AnswerBody } from "./answer-body.js";
import { FlatBodyPieces, renderFlatBody } from "./flat-body.js";

/** What the bodies of all answers share (one per app): the encoded pieces of providers, the buffers bodies are written in, and the bytes of bounded answers being written. */
export class BodyPieces {
  readonly flat = new FlatBodyPieces();
  readonly providers = new ProviderPieces();
  readonly buffers = new BodyBuffers();
  readonly writing = { bytes: 0 };
}

export class CandidatesBody implements AnswerBody {
  /** The engine's answer, made with its first candidate or its end. */
  private writer?: BodyWriter;
  /** The flat answer, whole, and the writer of it. */
  private whole?: Buffer<ArrayBuffer>;
  private flatWriter?: BodyWriter;
  /** Each provider's slot in `arena` once looked up for this answer. */
  private readonly encoded = new IdMap<number>();
  private readonly arena: UuidArena;
  private writeOne?: (cand: Candidate, names: NamesById) => void;
  private count = 0;
  private large?: () => void;
  /** Some of the body has left (respond started the stream): it can no longer be discarded. */
  private live = false;
  private liveBody?: LiveBody;
  /** The most bytes the body may have (none when undefined): past it the answer is refused with AnswerTooLarge. */
  private readonly bound?: Bound;
  /** Bytes this body counts in `pieces.writing` (see the constructor). */
  private counted = 0;

  /**
   * `maxBytes`: PLACEMENT_MAX_ANSWER_BYTES (0: no bound). Bounded answers
   * being written at once also share a budget of twice that (an answer at its
   * bound leaves as much to all the others): each counts its bytes as its
   * chunks fill, until it is whole or refused, and one that would pass the
   * budget is refused with AnswersBusy. While an answer is written its bytes
   * and the engine's state for it are held; a bound on each answer alone
   * left a worker answering many large queries at once to run out of heap.
   */
  constructor(
    private readonly shape: AnswerShape,
    private readonly query: CandidatesQuery,
    private readonly pieces: BodyPieces,
    maxBytes = 0,
  ) {
    this.arena = pieces.providers.arena();
    if (maxBytes > 0) {
      const budget = 2 * maxBytes;
      const filled = (bytes: number) => {
        if (pieces.writing.bytes + bytes > budget) throw new AnswersBusy(budget);
        pieces.writing.bytes += bytes;
        this.counted += bytes;
      };
      this.bound = { bytes: maxBytes, refuse: () => new AnswerTooLarge(maxBytes), filled };
    }
  }

  /** Allocation requests written so far. */
  get written(): number {
    return this.count;
  }

  /** Writes one allocation request (a field, so the engine can take it as its callback). */
  readonly candidate = (cand: Candidate, names: NamesById): void => {
    if (this.count++ > 0) this.w.bytes(COMMA);
    (this.writeOne ??= candidateWriter(this.w, this.shape, this.arena, this.uuid))(cand, names);
  };

  end(result: CandidatesResult): void {
    writeSummaries(this.w.bytes(SUMMARIES_OPEN), this.shape, this.query, result, this.arena, this.uuid);
    this.w.bytes(BODY_CLOSE).within();
  }

  flat(answer: FlatAnswer): void {
    this.count = answer.anchors.length;
    this.flatWriter = new BodyWriter(1024 + answer.anchors.length * 512, undefined, this.pieces.buffers, this.bound);
    // renderFlatBody checks the bound before the body is joined into one buffer.
    this.whole = renderFlatBody(this.flatWriter, this.shape, this.query, answer, this.pieces.flat);
  }

  /** A turn of the event loop, and once the body streams, room in its queue (LiveBody.room). */
  room(): Promise<void> {
    return this.liveBody ? this.liveBody.room() : turn();
  }

  discard(): boolean {
    if (this.live) return false;
    // Nothing written has been sent. A new writer (made on the next write) registers the stream's size trigger again.
    this.uncount();
    this.recycle();
    this.writeOne = undefined;
    this.encoded.clear();
    this.count = 0;
    return true;
  }

  /**
   * The response is sent (or will never be): the body's buffers go back to
   * be written again. Nothing this body wrote may be read after.
   */
  recycle(): void {
    this.writer?.recycle();
    this.flatWriter?.recycle();
    this.writer = undefined;
    this.flatWriter = undefined;
    this.whole = undefined;
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
   * With a bound the body never starts to leave before it is whole: an
   * answer that passes the bound is refused (this rejects with
   * AnswerTooLarge) while nothing of it has been sent, and what was written
   * is dropped. The bound is what the answer can cost in memory.
   */
  async respond(answering: Promise<unknown>, onError: (error: Error) => void): Promise<Buffer<ArrayBuffer> | ReadableStream<Uint8Array>> {
    const whole = answering.then(() => true);
    whole.catch(() => {}); // a failure is answered by the race below, or through the stream
    const racing = [whole];
    if (this.bound === undefined) {
      racing.push(new Promise<boolean>((resolve) => (this.large = () => resolve(false))));
      if (this.writer && this.large) this.writer.whenLarger(STREAM_FROM_BYTES).then(this.large);
    }
    let complete: boolean;
    try {
      complete = await Promise.race(racing);
    } catch (error) {
      // Nothing was sent, and the service is done writing: the buffers can be written again.
      this.recycle();
      throw error;
    } finally {
      // A bounded answer is whole or refused here: the service is done with it.
      this.uncount();
    }
    if (complete) {
      if (this.whole) return this.whole;
      return this.w.size > STREAM_ABOVE_BYTES ? this.w.stream() : this.w.finish();
    }
    this.live = true;
    const live = this.w.startStream();
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

  private uncount(): void {
    this.pieces.writing.bytes -= this.counted;
    this.counted = 0;
  }

  private get w(): BodyWriter {
    if (!this.writer) {
      this.writer = new BodyWriter(undefined, undefined, this.pieces.buffers, this.bound).bytes(REQUESTS_OPEN);
      if (this.large) this.writer.whenLarger(STREAM_FROM_BYTES).then(this.large);
    }
    return this.writer;
  }

  /** Each provider's slot in the arena, once looked up for this answer (checking a kept one costs a pass over the uuid). */
  private readonly uuid = (names: NamesById, id: number): number => {
    let slot = this.encoded.get(id);
    if (slot === undefined) this.encoded.set(id, (slot = this.arena.of(id, names.uuidOf(id))));
    return slot;
  };
}

const ZERO = ascii("0");
const RESOURCES_CLOSE_TRAITS_OPEN = ascii('},"traits":[');
const TRAITS_CLOSE_PARENT = ascii('],"parent_provider_uuid":');
const RESOURCES_CLOSE_PARENT = ascii('},"parent_provider_uuid":');
const ROOT = ascii(',"root_provider_uuid":');
const NULL = ascii("null");

/**
 * The provider summaries of every provider the candidates use, as bytes like
 * the requests: uuids (from the arena, a summary's opening with its uuid),
 * class keys and trait names are encoded once, and constant punctuation is
 * one piece where it meets.
 */
function writeSummaries(w: BodyWriter, shape: AnswerShape, query: CandidatesQuery, r: CandidatesResult, arena: UuidArena, uuid: UuidPieces): void {
  const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
  const quotedName = new Map<string, Buffer>();
  const name = (text: string) => {
    let q = quotedName.get(text);
    if (q === undefined) quotedName.set(text, (q = Buffer.from(JSON.stringify(text), "utf8")));
    return q;
  };
  // `"CLASS":{"capacity":N,"used":` per class id and capacity (trees of one cloud repeat a handful of capacities).
  const capacityPieces = new Map<number, Map<number, Buffer>>();
  for (let k = 0; k < r.summaries.length; k++) {
    const { provider, inventories, traits } = r.summaries[k];
    if (k > 0) w.bytes(COMMA);
    writeResourcesOpen(w, arena, uuid(r, provider.id));
    let first = true;
    for (const inv of inventories) {
      const className = r.resourceClassName(inv.resourceClassId);
      if (!shape.allClasses && !requested.has(className)) continue;
      if (!first) w.bytes(COMMA);
      first = false;
      let byCapacity = capacityPieces.get(inv.resourceClassId);
      if (byCapacity === undefined) capacityPieces.set(inv.resourceClassId, (byCapacity = new Map()));
      let piece = byCapacity.get(inv.capacity);
      if (piece === undefined) byCapacity.set(inv.capacity, (piece = Buffer.concat([name(className), ascii(`:{"capacity":${inv.capacity},"used":`)])));
      w.bytes(piece);
      if (inv.used === 0) w.bytes(ZERO);
      else w.ascii(String(inv.used));
      w.bytes(CLOSE);
    }
    if (shape.traits) {
      w.bytes(RESOURCES_CLOSE_TRAITS_OPEN);
      for (let i = 0; i < traits.length; i++) {
        if (i > 0) w.bytes(COMMA);
        w.bytes(name(traits[i]));
      }
    }
    if (!shape.tree) {
      w.bytes(shape.traits ? ARRAY_CLOSE : CLOSE).bytes(CLOSE);
      continue;
    }
    w.bytes(shape.traits ? TRAITS_CLOSE_PARENT : RESOURCES_CLOSE_PARENT);
    if (provider.parentId === null) w.bytes(NULL);
    else writeQuoted(w, arena, uuid(r, provider.parentId));
    writeQuoted(w.bytes(ROOT), arena, uuid(r, provider.rootId)).bytes(CLOSE);
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
