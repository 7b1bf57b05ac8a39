/**
 * Buffers for response bodies, used again once a response has been sent.
 *
 * Why: a body's buffers live outside the JavaScript heap, and V8 answers
 * every few megabytes of such memory allocated with a full mark-compact of
 * the heap (its external memory limit), most of it on helper threads. For
 * the scheduling loop's answers (a thousand flat candidates each) those
 * collections were a large part of the server's CPU per answer; a body
 * written into a buffer an earlier response left is no new memory at all.
 *
 * A buffer is given back only after its response's 'finish' (every byte
 * handed to the kernel), never while anything may still read it; a response
 * that did not finish (the client went away) leaves its buffers to the
 * garbage collector. Sizes are powers of two from CHUNK_BYTES, so a buffer
 * fits the next body of about the same size; at most `maxFreeBytes` are kept
 * free, so the kept memory is bounded whatever the answers' sizes. The
 * app's pool is the candidates render cache's (render/candidates/cache.ts),
 * made by createApp and closed by its close(): a closed pool keeps nothing.
 */
const CHUNK_BYTES = 64 * 1024;

/** The size kept for a request of `bytes`: the next power of two, at least CHUNK_BYTES. */
export function sizeClassOf(bytes: number): number {
  let size = CHUNK_BYTES;
  while (size < bytes) size *= 2;
  return size;
}

export class BodyBuffers {
  /** Free buffers by size. */
  private readonly free = new Map<number, Buffer<ArrayBuffer>[]>();
  private freeBytes = 0;
  private closed = false;

  constructor(readonly maxFreeBytes = 8 * 1024 * 1024) {}

  /** A buffer of at least `bytes` (its contents are whatever was there: write before sending). */
  take(bytes: number): Buffer<ArrayBuffer> {
    const size = sizeClassOf(bytes);
    const kept = this.free.get(size)?.pop();
    if (kept === undefined) return Buffer.allocUnsafeSlow(size);
    this.freeBytes -= size;
    return kept;
  }

  /**
   * Buffers `take` gave, once nothing will read them again. Each must be
   * given once: a buffer given twice would be written by two responses.
   */
  give(buffers: Iterable<Buffer<ArrayBuffer>>): void {
    if (this.closed) return;
    for (const buffer of buffers) {
      const size = buffer.length;
      if (size !== sizeClassOf(size) || this.freeBytes + size > this.maxFreeBytes) continue;
      let list = this.free.get(size);
      if (list === undefined) this.free.set(size, (list = []));
      list.push(buffer);
      this.freeBytes += size;
    }
  }

  /** Drops the free buffers and keeps none from now on (`take` still gives new ones). */
  close(): void {
    this.closed = true;
    this.free.clear();
    this.freeBytes = 0;
  }

  /** Bytes kept free now. */
  get keptBytes(): number {
    return this.freeBytes;
  }
}
