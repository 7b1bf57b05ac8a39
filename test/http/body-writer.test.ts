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
});
