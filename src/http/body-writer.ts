/**
 * A response body written as bytes into buffers outside the JavaScript heap.
 *
 * Cheaper: for large JSON answers made of many small pieces this is several
 * times cheaper than concatenating strings and encoding the result. V8 must
 * flatten a string of thousands of pieces before it can encode it, and that
 * flatten and the encode cost more than building the pieces; copying
 * pre-encoded pieces does neither (the candidates bench shows the effect).
 *
 * Smaller: a huge answer (tens of thousands of nested candidates) kept as
 * strings until the end is live heap that V8 must carry through every
 * collection, and it grows the heap to several times its size. Written here, each
 * piece is garbage as soon as it is copied, and the bytes sit in chunks of
 * `chunkBytes` that are streamed out and dropped one by one, as soon as they
 * fill when the caller starts the stream early (startStream).
 *
 * Text given to ascii() must be ASCII (numbers, mostly): it is written one
 * byte a character. Anything else comes as bytes already encoded (bytes,
 * range), in UTF-8 where it is JSON text.
 *
 * Given BodyBuffers, the writer takes its buffers there and gives them back
 * when told its response is sent (recycle); the chunks of a body that is
 * streamed leave as they fill and are not given back (keeping them until the
 * end would keep the whole body in memory).
 *
 * Given a Bound, the writer throws the bound's error as soon as what it has
 * written passes the bound's bytes (checked as chunks fill, and by within()),
 * so a body that will not be sent stops growing there.
 */
import { setImmediate as turn } from "node:timers/promises";
import type { BodyBuffers } from "./body-buffers.js";

/** Up to this many bytes a piece is copied byte by byte rather than by a native call. */
const SMALL = 16;

/** A body that leaves while it is still being written (see BodyWriter.startStream). */
export interface LiveBody {
  stream: ReadableStream<Uint8Array>;
  /** Sends what is left and closes the stream; the writer is done. */
  end(): void;
  /** Aborts the stream (the server then drops the connection, so the client sees a broken body, never a short one). */
  fail(error: Error): void;
  /**
   * Resolves after a turn of the event loop once fewer than QUEUED_BYTES of
   * the body wait to be sent (or the stream is closed), or after
   * ROOM_WAIT_MS: a writer that waits on it between pieces of work keeps
   * what is written but not yet sent bounded, where a client slower than the
   * writer had the rest of the body pile up in memory. The bound on the wait
   * keeps a client that stops reading from stopping the writer for good.
   */
  room(): Promise<void>;
}

/** The most bytes a body may have, and the error that refuses a larger one. */
export interface Bound {
  bytes: number;
  refuse: () => Error;
  /** Told the bytes of each chunk as it fills; throws to stop the body (a budget several bodies share). */
  filled?: (bytes: number) => void;
}

/** Bytes of a live body queued for the socket beyond which room() waits. */
const QUEUED_BYTES = 4 * 1024 * 1024;
const ROOM_WAIT_MS = 1000;

export class BodyWriter {
  private readonly full: Buffer<ArrayBuffer>[] = [];
  private current: Buffer<ArrayBuffer>;
  private used = 0;
  private readonly chunkBytes: number;
  /** Bytes in chunks already full (kept or sent). */
  private filled = 0;
  /** Once streaming, where each chunk goes as it fills. */
  private send?: (chunk: Buffer<ArrayBuffer>) => void;
  private waiting?: { bytes: number; resolve: () => void };
  /** What the writer took from `buffers` and has not sent away, to give back in recycle. */
  private readonly taken: Buffer<ArrayBuffer>[] = [];
  private recycled = false;

  /** `firstChunkBytes`: what the caller expects to write (one chunk then holds it all). */
  constructor(
    firstChunkBytes = 64 * 1024,
    chunkBytes = 64 * 1024,
    private readonly buffers?: BodyBuffers,
    private readonly bound?: Bound,
  ) {
    this.chunkBytes = chunkBytes;
    // A body past the bound is refused before it is whole: its first chunk need not hold more than the bound.
    this.current = this.allocate(bound ? Math.min(firstChunkBytes, bound.bytes) : firstChunkBytes);
  }

  /** Pre-encoded bytes (a piece made once and written many times). */
  bytes(piece: Uint8Array): this {
    const n = piece.length;
    // Locals, not fields, in the loop: V8 reloads `this.current` and `this.used` at every store otherwise.
    const current = this.current;
    const used = this.used;
    if (used + n <= current.length) {
      // A byte loop beats TypedArray.set's call for the many tiny pieces (commas, braces).
      if (n <= SMALL) for (let i = 0; i < n; i++) current[used + i] = piece[i];
      else current.set(piece, used);
      this.used = used + n;
      return this;
    }
    let from = 0;
    while (from < n) {
      if (this.used === this.current.length) this.nextChunk();
      const take = Math.min(n - from, this.current.length - this.used);
      this.current.set(piece.subarray(from, from + take), this.used);
      this.used += take;
      from += take;
    }
    return this;
  }

  /**
   * The bytes at [start, end) of `source`: a buffer of kept pieces, or a
   * chunk this writer wrote before (see the chunk getter). Within the chunk
   * being written it is one native move; no view of them is made (making one
   * per piece cost more than copying it).
   */
  range(source: Buffer<ArrayBuffer>, start: number, end: number): this {
    const n = end - start;
    const current = this.current;
    const used = this.used;
    if (used + n > current.length) return this.bytes(source.subarray(start, end));
    if (source === current) current.copyWithin(used, start, end);
    else for (let i = 0; i < n; i++) current[used + i] = source[start + i];
    this.used = used + n;
    return this;
  }

  /** An ASCII string made for this response (a number, a candidate's JSON). */
  ascii(text: string): this {
    const n = text.length;
    const current = this.current;
    const used = this.used;
    if (n <= SMALL && used + n <= current.length) {
      for (let i = 0; i < n; i++) current[used + i] = text.charCodeAt(i);
      this.used = used + n;
      return this;
    }
    let rest = text;
    for (;;) {
      const written = this.current.write(rest, this.used, "latin1");
      this.used += written;
      if (written === rest.length) return this;
      rest = rest.slice(written);
      this.nextChunk();
    }
  }

  /**
   * The chunk being written and the offset of the next byte in it: a caller
   * that writes a piece it will repeat notes both before and after, and if
   * the chunk did not change, writes it again with range (bytes already
   * written, not a buffer of their own).
   */
  get chunk(): Buffer<ArrayBuffer> {
    return this.current;
  }

  get offset(): number {
    return this.used;
  }

  /** Bytes written so far. */
  get size(): number {
    return this.filled + this.used;
  }

  /** Throws the bound's error if what is written so far passes it (the chunk being written is not checked as it fills). */
  within(): this {
    if (this.bound && this.size > this.bound.bytes) throw this.bound.refuse();
    return this;
  }

  /** Resolves once more than `bytes` are written (checked as chunks fill); one waiter at a time, a later call replaces it. */
  whenLarger(bytes: number): Promise<void> {
    if (this.filled > bytes) return Promise.resolve();
    return new Promise((resolve) => (this.waiting = { bytes, resolve }));
  }

  /** The body as one buffer (a view when it fits in one chunk, else a copy). */
  finish(): Buffer<ArrayBuffer> {
    const last = this.current.subarray(0, this.used);
    if (this.full.length === 0) return last;
    const whole = this.allocate(this.size);
    let at = 0;
    for (const chunk of [...this.full, last]) at += chunk.copy(whole, at);
    return whole.subarray(0, at);
  }

  /**
   * Gives the writer's buffers back to its BodyBuffers: call once the
   * response is sent, when neither the writer nor any view of what it wrote
   * (finish's buffer, a caller's kept piece) will be read again.
   */
  recycle(): void {
    if (this.recycled || this.buffers === undefined) return;
    this.recycled = true;
    this.buffers.give(this.taken);
    this.taken.length = 0;
  }

  /** The whole body as a stream of its chunks, each released once sent. */
  stream(): ReadableStream<Uint8Array> {
    const live = this.startStream();
    live.end();
    return live.stream;
  }

  /**
   * The body as a stream that starts now: the chunks full so far, then each
   * chunk as soon as it fills, so the client reads the first megabytes of a
   * large answer while the rest is still being found. Chunks are queued as
   * they come (the writer does not wait for the client).
   */
  startStream(): LiveBody {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    // Closed by end() or fail(), or by the client going away (then the rest is dropped).
    let open = true;
    // Who waits in room(): woken when the reader takes chunks (pull) or the stream closes.
    let wake: (() => void) | undefined;
    const woken = () => {
      wake?.();
      wake = undefined;
    };
    const stream = new ReadableStream<Uint8Array>(
      {
        start: (c) => {
          controller = c;
        },
        pull: woken,
        cancel: () => {
          open = false;
          woken();
        },
      },
      // Queued chunks counted in bytes, so desiredSize says how much of QUEUED_BYTES is left.
      { highWaterMark: QUEUED_BYTES, size: (chunk) => chunk.byteLength },
    );
    const send = (chunk: Buffer<ArrayBuffer>) => {
      if (open) controller.enqueue(chunk);
    };
    for (const chunk of this.full) send(chunk);
    this.full.length = 0;
    this.send = send;
    // Sent chunks are read by the socket at its own pace: none can be given back.
    this.taken.length = 0;
    return {
      stream,
      end: () => {
        if (this.used > 0) send(this.current.subarray(0, this.used));
        if (open) controller.close();
        open = false;
        woken();
      },
      fail: (error) => {
        if (open) controller.error(error);
        open = false;
        woken();
      },
      room: async () => {
        if (open && (controller.desiredSize ?? 1) <= 0) {
          let timer: NodeJS.Timeout | undefined;
          await new Promise<void>((resolve) => {
            wake = resolve;
            timer = setTimeout(woken, ROOM_WAIT_MS);
          });
          clearTimeout(timer);
        }
        await turn();
      },
    };
  }

  private nextChunk(): void {
    const chunk = this.current.subarray(0, this.used);
    this.filled += chunk.length;
    if (this.bound) {
      if (this.filled > this.bound.bytes) throw this.bound.refuse();
      this.bound.filled?.(chunk.length);
    }
    if (this.send) this.send(chunk);
    else this.full.push(chunk);
    this.current = this.allocate(this.chunkBytes);
    this.used = 0;
    if (this.waiting && this.filled > this.waiting.bytes) {
      this.waiting.resolve();
      this.waiting = undefined;
    }
  }

  private allocate(bytes: number): Buffer<ArrayBuffer> {
    if (this.buffers === undefined) return Buffer.allocUnsafe(bytes);
    const buffer = this.buffers.take(bytes);
    // A streaming writer's chunks leave as they fill (see startStream).
    if (this.send === undefined) this.taken.push(buffer);
    return buffer;
  }
}

/** An ASCII constant as bytes, made once at module load. */
export const ascii = (text: string): Buffer => Buffer.from(text, "latin1");
