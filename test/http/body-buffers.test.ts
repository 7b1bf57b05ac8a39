/** Response body buffers written again after their response is sent: no database. */
import { describe, expect, it } from "vitest";
import { BodyBuffers, sizeClassOf } from "../../src/http/body-buffers.js";
import { ascii, BodyWriter } from "../../src/http/body-writer.js";

const K = 1024;

describe("BodyBuffers", () => {
  it("sizes buffers in powers of two from 64 KiB", () => {
    expect(sizeClassOf(1)).toBe(64 * K);
    expect(sizeClassOf(64 * K)).toBe(64 * K);
    expect(sizeClassOf(64 * K + 1)).toBe(128 * K);
    expect(sizeClassOf(513 * K)).toBe(1024 * K);
  });

  it("gives a buffer given back to the next body of its size class, and a new one otherwise", () => {
    const buffers = new BodyBuffers();
    const first = buffers.take(500 * K);
    expect(first.length).toBe(512 * K);
    buffers.give([first]);
    expect(buffers.keptBytes).toBe(512 * K);
    expect(buffers.take(300 * K)).toBe(first);
    expect(buffers.keptBytes).toBe(0);
    expect(buffers.take(300 * K)).not.toBe(first);
    expect(buffers.take(100 * K).length).toBe(128 * K);
  });

  it("keeps at most maxFreeBytes, and nothing it did not size", () => {
    const buffers = new BodyBuffers(256 * K);
    const taken = [buffers.take(100 * K), buffers.take(100 * K), buffers.take(100 * K)];
    buffers.give([...taken, Buffer.allocUnsafe(100 * K)]);
    expect(buffers.keptBytes).toBe(256 * K);
    const again = [buffers.take(1), buffers.take(100 * K), buffers.take(100 * K), buffers.take(100 * K)];
    expect(again.filter((b) => taken.includes(b as Buffer<ArrayBuffer>))).toHaveLength(2);
  });
});

describe("BodyWriter with BodyBuffers", () => {
  /** Writes `n` numbered pieces and returns what the body should read. */
  function fill(w: BodyWriter, n: number): string {
    let expected = "";
    for (let i = 0; i < n; i++) {
      w.bytes(ascii(`{"piece":${i}},`));
      expected += `{"piece":${i}},`;
    }
    return expected;
  }

  it("writes a body over buffers an earlier body left, byte for byte, and gives back each buffer once", () => {
    const buffers = new BodyBuffers();
    const first = new BodyWriter(1024, 1024, buffers);
    const firstText = fill(first, 20_000);
    expect(first.finish().toString("latin1")).toBe(firstText);
    first.recycle();
    const kept = buffers.keptBytes;
    // Every chunk and the whole body's copy came back.
    expect(kept).toBeGreaterThan(first.size);
    first.recycle();
    expect(buffers.keptBytes).toBe(kept);

    const second = new BodyWriter(1024, 1024, buffers);
    const secondText = fill(second, 15_000);
    expect(buffers.keptBytes).toBeLessThan(kept);
    expect(second.finish().toString("latin1")).toBe(secondText);
  });

  it("gives back none of a streamed body's chunks, which leave at the socket's pace", async () => {
    const buffers = new BodyBuffers();
    const w = new BodyWriter(undefined, undefined, buffers);
    const text = fill(w, 20_000);
    const stream = w.stream();
    w.recycle();
    expect(buffers.keptBytes).toBe(0);
    const chunks: Uint8Array[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(Buffer.concat(chunks).toString("latin1")).toBe(text);
  });
});
