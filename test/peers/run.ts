/**
 * Other people's test suites against this server and the reference:
 *
 *   npm run peers                                  every suite, every pinned test
 *   npm run peers -- --suites osc-placement,nova   some suites
 *   npm run peers -- --list nova-ci                 another pinned list for a suite (test/peers/nova-ci.txt)
 *
 * Starts the reference Placement (Debian's python3-placement through
 * ../shared/conformance/reference-server) and our built server, each on a
 * fresh database of the PostgreSQL at DATABASE_URL, then runs each suite's
 * pinned tests (test/peers/<suite>.txt), unchanged, against both at once
 * through test/peers/peer_tests.py, which points the suites' Placement
 * fixture at the live server. Prints per suite the passed, failed and skipped
 * tests on each server, and each test that passes on the reference and not
 * here, with its assertion; exits 1 if there is one. See docs/peers.md.
 *
 * A suite whose Debian packages are missing is skipped with the packages to
 * install; without the reference the run says so and exits 0, or 2 with
 * --require-reference. Nothing is installed here.
 */
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { referenceUnavailable, startOurs, startReference, type RunningServer } from "../compat/servers.js";
import { assertionOf, judgeSuite, parsePinnedList, type Outcome, type SuiteVerdict, type Tally } from "./verdict.js";

/** test/peers in the source tree, whether this runs from there or from dist/. */
const here = path.dirname(fileURLToPath(import.meta.url));
const PEERS_DIR = here.split(path.sep).includes("dist") ? path.resolve(here, "../../../test/peers") : here;
const HARNESS = path.join(PEERS_DIR, "peer_tests.py");
const PYTHON = "/usr/bin/python3";

interface Suite {
  name: string;
  what: string;
  /** Python modules whose import proves the suite and its test dependencies are installed. */
  modules: string;
  /** Files the suite needs besides the modules. */
  files: string[];
  /** The Debian packages that provide them. */
  packages: string[];
}

const SUITES: Suite[] = [
  {
    name: "osc-placement",
    what: "osc-placement's functional tests (the openstack CLI)",
    modules: "osc_placement.tests.functional.base, openstackclient.shell, placement.tests.functional.fixtures.placement",
    files: [],
    packages: ["python3-osc-placement", "python3-openstackclient", "python3-placement", "python3-oslotest", "python3-wsgi-intercept"],
  },
  {
    name: "openstacksdk",
    what: "openstacksdk's placement functional tests",
    // Not the test module itself: importing it reads clouds.yaml, which the harness writes.
    modules: "openstack.tests.functional.placement.v1, openstack.tests.base",
    files: [],
    packages: ["python3-openstacksdk", "python3-oslotest"],
  },
  {
    name: "nova",
    what: "Nova's functional tests through its report client, resource tracker, scheduler and conductor",
    modules: "nova.tests.functional.integrated_helpers, placement.tests.functional.fixtures.placement, ddt, testscenarios",
    files: ["/usr/share/nova-common/api-paste.ini"],
    packages: ["python3-nova", "nova-common", "python3-placement", "python3-oslotest", "python3-wsgi-intercept", "python3-ddt", "python3-testscenarios"],
  },
];

const { values } = parseArgs({
  options: {
    suites: { type: "string", default: SUITES.map((s) => s.name).join(",") },
    list: { type: "string", multiple: true, default: [] },
    "require-reference": { type: "boolean", default: false },
    "suite-timeout": { type: "string", default: "30" },
    "test-timeout": { type: "string", default: "180" },
  },
});

/** --list nova-ci: the file test/peers/nova-ci.txt in place of nova.txt for the suite whose name it starts with. */
function listFor(suite: Suite): string {
  const chosen = values.list!.find((name) => name === suite.name || name.startsWith(`${suite.name}-`));
  return path.join(PEERS_DIR, `${chosen ?? suite.name}.txt`);
}

function missingFor(suite: Suite): string | undefined {
  const imports = spawnSync(PYTHON, ["-c", `import ${suite.modules}`], { encoding: "utf8" });
  const absent = suite.files.filter((f) => !existsSync(f));
  if (imports.status === 0 && absent.length === 0) return undefined;
  const why = imports.status !== 0 ? (imports.stderr.trim().split("\n").pop() ?? "import failed") : `${absent.join(", ")} not found`;
  return `${why}; install the Debian packages ${suite.packages.join(" ")}`;
}

/** Runs the ids on one server; resolves with the outcomes reported before the harness ended or was stopped. */
function runHarness(label: string, server: RunningServer, ids: string[], logFile: string, timeoutMs: number): Promise<{ outcomes: Outcome[]; ended: string }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, OS_TEST_TIMEOUT: values["test-timeout"], PYTHONDONTWRITEBYTECODE: "1" };
    const child = spawn(PYTHON, [HARNESS, "--url", server.baseUrl, ...ids], { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const log = createWriteStream(logFile);
    child.stderr.pipe(log);
    const outcomes: Outcome[] = [];
    let pending = "";
    child.stdout.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.trim()) continue;
        outcomes.push(JSON.parse(line) as Outcome);
        // A line now and then, so a long suite is seen to move.
        if (outcomes.length % 25 === 0) console.log(`  ${label}: ${outcomes.length} of ${ids.length} run`);
      }
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }, timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const ended = timedOut ? `stopped after ${timeoutMs / 60_000} minutes` : code === 0 ? "" : `the harness exited (${code ?? signal}); see ${logFile}`;
      resolve({ outcomes, ended });
    });
  });
}

const show = (t: Tally) => `${t.passed} passed, ${t.failed} failed${t.skipped ? `, ${t.skipped} skipped` : ""}`;
const indent = (text: string) => text.replace(/^/gm, "      ");

function report(suite: Suite, verdict: SuiteVerdict, listed: number, ended: { reference: string; ours: string }): void {
  console.log(`\n${suite.name}: ${suite.what}, ${listed} pinned tests (${path.relative(process.cwd(), listFor(suite))})`);
  console.log(`  reference: ${show(verdict.reference)}${ended.reference ? ` (${ended.reference})` : ""}`);
  console.log(`  ours:      ${show(verdict.ours)}${ended.ours ? ` (${ended.ours})` : ""}`);
  for (const { test, reference, ours } of verdict.listedReferenceFailures) {
    console.log(`  not counted: ${test.id} (reference fails: ${test.referenceFails}); reference ${reference?.status ?? "not run"}, ours ${ours?.status ?? "not run"}`);
    if (reference?.status === "passed") console.log("    it passed on the reference this time: a flaky test, or the list is out of date");
  }
  for (const outcome of verdict.unlistedReferenceFailures) {
    console.log(`  fails on the reference too (not in the list as such; not counted against us): ${outcome.id}`);
    console.log(indent(assertionOf(outcome.details, 6)));
  }
  if (verdict.notRun.length) console.log(`  run on neither server: ${verdict.notRun.join(", ")}`);
  for (const { id, ours } of verdict.regressions) {
    console.log(`  PASSES ON THE REFERENCE, ${ours ? ours.status.toUpperCase() : "DID NOT RUN"} HERE: ${id}`);
    if (ours?.details) console.log(indent(assertionOf(ours.details)));
  }
}

async function main(): Promise<number> {
  const chosen = values.suites!.split(",").map((s) => s.trim());
  const unknown = chosen.filter((name) => !SUITES.some((s) => s.name === name));
  if (unknown.length) {
    console.error(`peers: unknown suite ${unknown.join(", ")} (known: ${SUITES.map((s) => s.name).join(", ")})`);
    return 2;
  }
  const noReference = referenceUnavailable();
  if (noReference) {
    console.log(`peers: skipped, the reference Placement cannot run here: ${noReference}`);
    return values["require-reference"] ? 2 : 0;
  }
  const runnable: { suite: Suite; pinned: ReturnType<typeof parsePinnedList> }[] = [];
  for (const suite of SUITES.filter((s) => chosen.includes(s.name))) {
    const missing = missingFor(suite);
    if (missing) {
      console.log(`peers: ${suite.name} skipped: ${missing}`);
      continue;
    }
    const file = listFor(suite);
    runnable.push({ suite, pinned: parsePinnedList(readFileSync(file, "utf8"), file) });
  }
  if (runnable.length === 0) return 0;

  const adminUrl = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
  const logs = mkdtempSync(path.join(tmpdir(), "peers-"));
  const tag = `${process.pid}`;
  const [reference, ours] = await Promise.all([startReference(adminUrl, `peers_reference_${tag}`), startOurs(adminUrl, `peers_ours_${tag}`)]);
  const totals: { name: string; verdict: SuiteVerdict }[] = [];
  try {
    for (const { suite, pinned } of runnable) {
      const ids = pinned.map((t) => t.id);
      const started = Date.now();
      const timeoutMs = Number(values["suite-timeout"]) * 60_000;
      // Both servers at once: the suite's own work (Nova's services in process) costs more than either server.
      const [theirs, mine] = await Promise.all([
        runHarness(`${suite.name} on the reference`, reference, ids, path.join(logs, `${suite.name}-reference.log`), timeoutMs),
        runHarness(`${suite.name} on ours`, ours, ids, path.join(logs, `${suite.name}-ours.log`), timeoutMs),
      ]);
      const verdict = judgeSuite(pinned, theirs.outcomes, mine.outcomes);
      report(suite, verdict, pinned.length, { reference: theirs.ended, ours: mine.ended });
      console.log(`  (${Math.round((Date.now() - started) / 1000)} s; the suites' logs: ${logs})`);
      totals.push({ name: suite.name, verdict });
    }
  } finally {
    await Promise.all([reference.stop(), ours.stop()]);
  }

  console.log("\nsuite           reference              ours");
  for (const { name, verdict } of totals) console.log(`${name.padEnd(15)} ${show(verdict.reference).padEnd(22)} ${show(verdict.ours)}`);
  const regressions = totals.reduce((n, t) => n + t.verdict.regressions.length, 0);
  if (regressions) {
    console.log(`\npeers: ${regressions} test(s) pass on the reference and not here`);
    return 1;
  }
  console.log("\npeers: every pinned test that passes on the reference passes here");
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`peers: ${(err as Error).stack ?? err}`);
    process.exit(2);
  },
);
