import { describe, expect, it } from "vitest";
import { ascii, BodyWriter } from "../../src/http/body-writer.js";

/** Writes 1,000 small pieces and returns the writer and the text it should hold. */
function written(w: BodyWriter): { w: BodyWriter; expected: string } {
  const piece = ascii('{"a":');
  let expected = "";
  for (let i = 0; i < 1000; i++) {
    w.bytes(piece).ascii(String(i)).bytes(ascii("}"));
    expected += `{"a":${i}}`;
  }
  return { w, expected };
}

describe("BodyWriter", () => {
  it("keeps every byte in order across chunks, as one buffer", () => {
    const { w, expected } = written(new BodyWriter(8, 16));
    expect(w.size).toBe(expected.length);
    expect(w.finish().toString("latin1")).toBe(expected);
  });

  it("splits pieces and strings longer than a chunk", () => {
    const big = "x".repeat(100);
    const w = new BodyWriter(4, 7).ascii("ab").ascii(big).bytes(ascii(big.toUpperCase()));
    expect(w.finish().toString("latin1")).toBe(`ab${big}${big.toUpperCase()}`);
  });

  it("streams the same bytes chunk by chunk", async () => {
    const { w, expected } = written(new BodyWriter(8, 64));
    const chunks: Uint8Array[] = [];
    for await (const chunk of w.stream()) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(10);
    expect(Buffer.concat(chunks).toString("latin1")).toBe(expected);
  });

  it("once streaming, sends each chunk as soon as it fills, and the rest at the end", async () => {
    const w = new BodyWriter(8, 16).ascii("a".repeat(20));
    const live = w.startStream();
    const reader = live.stream.getReader();
    // The chunks full before the stream started (8 + 16 bytes hold 20: one full chunk so far).
    expect(Buffer.from((await reader.read()).value!).toString("latin1")).toBe("a".repeat(8));
    w.ascii("b".repeat(20));
    // A chunk that fills now leaves now, before end().
    expect(Buffer.from((await reader.read()).value!).toString("latin1")).toBe("a".repeat(12) + "b".repeat(4));
    live.end();
    expect(Buffer.from((await reader.read()).value!).toString("latin1")).toBe("b".repeat(16));
    expect((await reader.read()).done).toBe(true);
  });

  it("aborts a stream that fails, so the client never takes a short body for a whole one", async () => {
    const w = new BodyWriter(8, 16).ascii("a".repeat(20));
    const live = w.startStream();
    const reader = live.stream.getReader();
    await reader.read();
    live.fail(new Error("lost the database"));
    await expect(reader.read()).rejects.toThrow("lost the database");
  });

  it("gives a live body's writer room once the reader has taken what was queued past its bound, and never holds it longer than the bound on the wait", async () => {
    const chunk = 1024 * 1024;
    const w = new BodyWriter(chunk, chunk).ascii("x".repeat(chunk));
    const live = w.startStream();
    // Little queued: room after a turn of the event loop.
    await live.room();
    // Six more full chunks queued and nobody reading: past the 4 MB bound.
    w.ascii("x".repeat(6 * chunk));
    let roomy = false;
    const waiting = live.room().then(() => (roomy = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(roomy).toBe(false);
    const reader = live.stream.getReader();
    for (let i = 0; i < 4; i++) await reader.read();
    await waiting;
    expect(roomy).toBe(true);
    // A reader that stops: the wait ends anyway, after its bound (about a second).
    w.ascii("x".repeat(6 * chunk));
    const started = performance.now();
    await live.room();
    expect(performance.now() - started).toBeGreaterThan(900);
    // A closed stream waits for nobody.
    live.fail(new Error("client gone"));
    const closed = performance.now();
    await live.room();
    expect(performance.now() - closed).toBeLessThan(500);
  });

  it("tells when the written size passes a mark", async () => {
    const w = new BodyWriter(8, 16);
    let passed = false;
    void w.whenLarger(30).then(() => (passed = true));
    w.ascii("x".repeat(30));
    await Promise.resolve();
    expect(passed).toBe(false);
    w.ascii("x".repeat(20));
    await Promise.resolve();
    expect(passed).toBe(true);
    expect(w.size).toBe(50);
  });
});

