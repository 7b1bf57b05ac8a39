/**
 * A response body written as bytes into one growing buffer. For large JSON
 * answers made of many small pieces this is several times cheaper than
 * concatenating strings and encoding the result: V8 must flatten a string of
 * a thousand pieces before it can encode it, and that flatten and the encode
 * cost more than building the pieces (1,000 allocation candidates, 434 KB:
 * 1.4 ms as a string then Buffer.from, 0.2 ms copying pre-encoded pieces).
 * Everything written must be ASCII (JSON text whose strings are uuids and
 * [A-Z0-9_] names, numbers and punctuation).
 */
export class BodyWriter {
  private buffer: Buffer<ArrayBuffer>;
  private length = 0;

  constructor(initialBytes = 64 * 1024) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  /** Pre-encoded bytes (a piece made once and written many times). */
  bytes(piece: Uint8Array): this {
    this.reserve(piece.length);
    this.buffer.set(piece, this.length);
    this.length += piece.length;
    return this;
  }

  /** A short ASCII string made for this response (a number, say). */
  ascii(text: string): this {
    this.reserve(text.length);
    this.length += this.buffer.write(text, this.length, "latin1");
    return this;
  }

  /** The body written so far (a view, not a copy). */
  finish(): Buffer<ArrayBuffer> {
    return this.buffer.subarray(0, this.length);
  }

  private reserve(more: number): void {
    if (this.length + more <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + more));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }
}

/** An ASCII constant as bytes, made once at module load. */
export const ascii = (text: string): Buffer => Buffer.from(text, "latin1");
