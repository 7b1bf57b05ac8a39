/**
 * The peer runner's gate (npm run peers, test/peers/run.ts) on plain data: which
 * outcomes fail the run, which are counted, how the pinned lists are read. The
 * runner itself, with Python and both servers, is CI's peer step.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { assertionOf, judgeSuite, parsePinnedList, type Outcome, type Status } from "./verdict.js";

const outcome = (id: string, status: Status, details = ""): Outcome => ({ id, status, details, seconds: 1 });

describe("the pinned lists", () => {
  it("reads ids, comments and the reference's known failures with their reason", () => {
    const text = ["# a comment", "", "pkg.mod.Case.test_a", "  pkg.mod.Case.test_b   # reference fails: a 500 on PostgreSQL  ", "pkg.mod.Case.test_c"].join("\n");
    expect(parsePinnedList(text, "x.txt")).toEqual([
      { id: "pkg.mod.Case.test_a" },
      { id: "pkg.mod.Case.test_b", referenceFails: "a 500 on PostgreSQL" },
      { id: "pkg.mod.Case.test_c" },
    ]);
  });

  it("refuses a line it cannot read and a test listed twice, naming the line", () => {
    expect(() => parsePinnedList("a.B.test_x # flaky", "x.txt")).toThrow(/x\.txt:1: expected/);
    expect(() => parsePinnedList("a.B.test_x extra", "x.txt")).toThrow(/x\.txt:1: expected/);
    expect(() => parsePinnedList("a.B.test_x\n\na.B.test_x", "x.txt")).toThrow(/x\.txt:3: a\.B\.test_x is listed twice/);
  });

  it.each(["osc-placement", "openstacksdk", "nova", "nova-ci"])("test/peers/%s.txt is well formed", (name) => {
    const file = new URL(`./${name}.txt`, import.meta.url).pathname;
    const pinned = parsePinnedList(readFileSync(file, "utf8"), file);
    expect(pinned.length).toBeGreaterThan(0);
    for (const test of pinned) expect(test.id).toMatch(/^[A-Za-z_][\w.]*\.test_\w+$/);
  });

  it("nova-ci.txt is a part of nova.txt, so a test CI runs is also in the full run, listed the same way", () => {
    const read = (name: string) => parsePinnedList(readFileSync(new URL(`./${name}.txt`, import.meta.url).pathname, "utf8"), name);
    const full = new Map(read("nova").map((t) => [t.id, t]));
    for (const test of read("nova-ci")) expect(full.get(test.id), test.id).toEqual(test);
  });
});

describe("a suite's verdict", () => {
  const pinned = parsePinnedList(["s.T.test_ok", "s.T.test_broken_here", "s.T.test_skipped_here", "s.T.test_gone_here", "s.T.test_flaky_reference", "s.T.test_known # reference fails: a 500"].join("\n"), "s.txt");
  const reference = [
    outcome("s.T.test_ok", "passed"),
    outcome("s.T.test_broken_here", "passed"),
    outcome("s.T.test_skipped_here", "passed"),
    outcome("s.T.test_gone_here", "passed"),
    outcome("s.T.test_flaky_reference", "failed", "Traceback\n  File x\nAssertionError: 1 != 2"),
    outcome("s.T.test_known", "failed", "HTTP 500"),
  ];
  const ours = [
    outcome("s.T.test_ok", "passed"),
    outcome("s.T.test_broken_here", "failed", "Traceback\n  File y\nAssertionError: 409 != 200"),
    outcome("s.T.test_skipped_here", "skipped", "no microversion 1.39"),
    outcome("s.T.test_flaky_reference", "failed", "Traceback"),
    outcome("s.T.test_known", "passed"),
  ];
  const verdict = judgeSuite(pinned, reference, ours);

  it("fails on each test that passes on the reference and fails, skips or does not run here", () => {
    expect(verdict.regressions.map((r) => [r.id, r.ours?.status])).toEqual([
      ["s.T.test_broken_here", "failed"],
      ["s.T.test_skipped_here", "skipped"],
      ["s.T.test_gone_here", undefined],
    ]);
  });

  it("counts every listed test but the reference's known failures, on each server", () => {
    expect(verdict.reference).toEqual({ passed: 4, failed: 1, skipped: 0 });
    expect(verdict.ours).toEqual({ passed: 1, failed: 2, skipped: 1 });
  });

  it("does not hold a test the reference fails against us, listed or not, and shows both", () => {
    expect(verdict.unlistedReferenceFailures.map((o) => o.id)).toEqual(["s.T.test_flaky_reference"]);
    expect(verdict.listedReferenceFailures.map((f) => [f.test.id, f.reference?.status, f.ours?.status])).toEqual([["s.T.test_known", "failed", "passed"]]);
  });

  it("passes when every test that passes on the reference passes here", () => {
    const same = judgeSuite(pinned, reference, reference);
    expect(same.regressions).toEqual([]);
    expect(same.notRun).toEqual([]);
  });

  it("names the tests neither server ran", () => {
    expect(judgeSuite(pinned, reference.slice(1), ours.slice(1)).notRun).toEqual(["s.T.test_ok"]);
  });

  it("prints the end of a traceback, where the assertion is", () => {
    expect(assertionOf("a\nb\nc\nAssertionError: x", 2)).toBe("c\nAssertionError: x");
  });
});
