import { describe, expect, it } from "vitest";
import { ascii, BodyWriter } from "../../src/http/body-writer.js";

describe("BodyWriter", () => {
  it("keeps every byte in order when it outgrows its first buffer", () => {
    const w = new BodyWriter(8);
    const piece = ascii('{"a":');
    let expected = "";
    for (let i = 0; i < 1000; i++) {
      w.bytes(piece).ascii(String(i)).bytes(ascii("}"));
      expected += `{"a":${i}}`;
    }
    expect(w.finish().toString("latin1")).toBe(expected);
  });

  it("writes a piece larger than twice its buffer in one step", () => {
    const big = "x".repeat(100);
    expect(new BodyWriter(4).ascii("ab").ascii(big).finish().toString("latin1")).toBe(`ab${big}`);
  });
});
