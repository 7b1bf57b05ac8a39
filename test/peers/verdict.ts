/**
 * The pinned lists of peer tests and the verdict over one suite's outcomes on
 * the two servers. Pure functions over plain data, so the rules of the gate
 * are tested without Python or a server (test/peers/verdict.test.ts).
 *
 * A list (test/peers/<suite>.txt) names one upstream test id a line. Blank
 * lines and lines starting with `#` are comments. A test the reference itself
 * fails is still listed, followed by `# reference fails: <why>`: it runs on
 * both servers, its outcome is printed, and it is not counted.
 */

export interface PinnedTest {
  id: string;
  /** Why the reference fails this test, when it does. */
  referenceFails?: string;
}

export type Status = "passed" | "failed" | "skipped";

export interface Outcome {
  id: string;
  status: Status;
  /** The traceback of a failure, or the reason of a skip. */
  details: string;
  seconds: number;
}

const REFERENCE_FAILS = /^(\S+)\s+#\s*reference fails:\s*(.+)$/;

export function parsePinnedList(text: string, source: string): PinnedTest[] {
  const tests: PinnedTest[] = [];
  const seen = new Set<string>();
  text.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const known = REFERENCE_FAILS.exec(line);
    const test: PinnedTest = known ? { id: known[1], referenceFails: known[2].trim() } : { id: line };
    if (/\s/.test(test.id) || (!known && line.includes("#"))) {
      throw new Error(`${source}:${index + 1}: expected "<test id>" or "<test id>  # reference fails: <why>", got "${line}"`);
    }
    if (seen.has(test.id)) throw new Error(`${source}:${index + 1}: ${test.id} is listed twice`);
    seen.add(test.id);
    tests.push(test);
  });
  return tests;
}

export interface Tally {
  passed: number;
  failed: number;
  skipped: number;
}

export interface SuiteVerdict {
  /** Counted tests only (the ones not listed as failing on the reference). */
  reference: Tally;
  ours: Tally;
  /** Passed on the reference, and failed, skipped or missing here: each one fails the run. */
  regressions: { id: string; ours: Outcome | undefined }[];
  /** Failed on the reference although not listed so (a flaky reference test, or the list is out of date): printed, not counted. */
  unlistedReferenceFailures: Outcome[];
  /** Listed as failing on the reference: how each went on both servers. */
  listedReferenceFailures: { test: PinnedTest; reference: Outcome | undefined; ours: Outcome | undefined }[];
  /** Listed but reported by neither server (the run was cut short, or the test is gone from the package). */
  notRun: string[];
}

const tally = (outcomes: (Outcome | undefined)[]): Tally => ({
  passed: outcomes.filter((o) => o?.status === "passed").length,
  failed: outcomes.filter((o) => o !== undefined && o.status === "failed").length,
  skipped: outcomes.filter((o) => o?.status === "skipped").length,
});

export function judgeSuite(pinned: PinnedTest[], reference: Outcome[], ours: Outcome[]): SuiteVerdict {
  const theirs = new Map(reference.map((o) => [o.id, o]));
  const mine = new Map(ours.map((o) => [o.id, o]));
  const counted = pinned.filter((t) => t.referenceFails === undefined);
  // Not passed here covers failed, skipped (the test decided this server lacks something) and missing (our run died).
  const regressions = counted
    .filter((t) => theirs.get(t.id)?.status === "passed" && mine.get(t.id)?.status !== "passed")
    .map((t) => ({ id: t.id, ours: mine.get(t.id) }));
  return {
    reference: tally(counted.map((t) => theirs.get(t.id))),
    ours: tally(counted.map((t) => mine.get(t.id))),
    regressions,
    unlistedReferenceFailures: counted.map((t) => theirs.get(t.id)).filter((o): o is Outcome => o?.status === "failed"),
    listedReferenceFailures: pinned
      .filter((t) => t.referenceFails !== undefined)
      .map((test) => ({ test, reference: theirs.get(test.id), ours: mine.get(test.id) })),
    notRun: pinned.filter((t) => !theirs.has(t.id) && !mine.has(t.id)).map((t) => t.id),
  };
}

/** The last lines of a traceback: the assertion and where it was raised. */
export function assertionOf(details: string, lines = 12): string {
  const all = details.trimEnd().split("\n");
  return all.slice(Math.max(0, all.length - lines)).join("\n");
}
