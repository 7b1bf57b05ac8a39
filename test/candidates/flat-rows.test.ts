/** How the flat statement's one candidates text is read (flat-statement.ts readCandidates): no database. */
import { describe, expect, it } from "vitest";
import { readCandidates } from "../../src/services/candidates/flat-statement.js";

describe("the flat statement's candidates text", () => {
  it("is empty when the statement found no candidate", () => {
    expect(readCandidates(null, 0)).toEqual([]);
  });

  it("gives each candidate's id, details key and non-zero usage as class id and amount pairs", () => {
    const text = "7 3 1733065200123456,12 3 1733065200123999 0 4 2 120,1000000 1 9 5 2147483647";
    expect(readCandidates(text, 3)).toEqual([
      { id: 7, key: "3 1733065200123456", used: undefined },
      { id: 12, key: "3 1733065200123999", used: [0, 4, 2, 120] },
      { id: 1000000, key: "1 9", used: [5, 2147483647] },
    ]);
  });

  it("keeps the key exactly as the details statement writes it, so the kept details are found by it", () => {
    const [row] = readCandidates("42 10 9007199254740993", 1);
    expect(row.key).toBe("10 9007199254740993");
  });

  it("refuses a text that does not match its count", () => {
    expect(() => readCandidates("1 3 5,2 3 6", 1)).toThrow(/longer than its count/);
    expect(() => readCandidates("1 3 5;2 3 6", 2)).toThrow(/unexpected candidates text/);
    expect(() => readCandidates("1 3 5", 2)).toThrow(/shorter than its count/);
    expect(() => readCandidates("1", 1)).toThrow();
  });
});
