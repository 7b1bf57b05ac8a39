/**
 * A real client that must not tell the difference: the openstack CLI with
 * Debian's osc-placement plugin runs the same operator session against the
 * reference Placement and against this server, and must print the same
 * thing, exit with the same code, and write the same error, for every
 * command (the numbers' kinds included: `inventory list` prints 16.0).
 *
 * Normalised, for the reasons the differential test gives (test/compat/compare.ts):
 * request ids, and jsonschema's dump of Placement's own schema objects after
 * "Failed validating" in a 400's message.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { pythonModulesUnavailable } from "../support/debian.js";
import { startLiveServer, type LiveServer } from "../support/live-server.js";
import { referenceUnavailable, startReferencePlacement, type ReferencePlacement } from "../support/reference-placement.js";

const DRIVER = new URL("./osc-driver.py", import.meta.url).pathname;

const missing = referenceUnavailable() ?? pythonModulesUnavailable("openstackclient.shell, osc_placement", "python3-osc-placement", "the openstack CLI's placement plugin");

const CN = "5e4c1d8e-8f7e-4a51-9a0a-6a1c4cf6a001";
const NUMA = "5e4c1d8e-8f7e-4a51-9a0a-6a1c4cf6a002";
const UNKNOWN = "5e4c1d8e-8f7e-4a51-9a0a-6a1c4cf6a0ff";
const AGG = "7a2b3c4d-0000-4000-8000-00000000a001";
const VM = "9c8b7a6d-0000-4000-8000-00000000c001";
const VM2 = "9c8b7a6d-0000-4000-8000-00000000c002";
const PROJECT = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
const USER = "1f1e2d3c4b5a69788796a5b4c3d2e1f0";

const at = (version: string, ...argv: string[]) => ["--os-placement-api-version", version, ...argv];
const json = ["-f", "json"];

/** An operator's session: build a small tree, fill it, allocate, look around, make mistakes, clean up. */
const SESSION: string[][] = [
  at("1.20", "resource", "provider", "create", "--uuid", CN, "compute-1", ...json),
  at("1.20", "resource", "provider", "create", "--uuid", NUMA, "--parent-provider", CN, "compute-1-numa0", ...json),
  at("1.14", "resource", "provider", "list", "--sort-column", "uuid", ...json),
  at("1.14", "resource", "provider", "list", "--in-tree", CN, "--sort-column", "uuid"),
  ["resource", "provider", "inventory", "set", CN, "--resource", "VCPU=8", "--resource", "VCPU:allocation_ratio=16", "--resource", "MEMORY_MB=4096", "--resource", "MEMORY_MB:reserved=512", ...json],
  ["resource", "provider", "inventory", "list", CN, ...json],
  ["resource", "provider", "inventory", "list", CN],
  ["resource", "provider", "inventory", "show", CN, "VCPU", ...json],
  ["resource", "provider", "inventory", "set", NUMA, "--resource", "VCPU=0"],
  ["resource", "provider", "inventory", "set", NUMA, "--resource", "VCPU=4", "--resource", "VCPU:reserved=4"],
  at("1.26", "resource", "provider", "inventory", "set", NUMA, "--resource", "VCPU=4", "--resource", "VCPU:reserved=4", ...json),
  at("1.2", "resource", "class", "create", "CUSTOM_GPU_A"),
  at("1.2", "resource", "class", "create", "GPU_A"),
  at("1.2", "resource", "class", "show", "CUSTOM_GPU_A", ...json),
  at("1.6", "trait", "create", "CUSTOM_FAST"),
  at("1.6", "trait", "create", "fast"),
  at("1.6", "resource", "provider", "trait", "set", CN, "--trait", "CUSTOM_FAST", "--trait", "HW_CPU_X86_AVX", "--sort-column", "name", ...json),
  at("1.6", "resource", "provider", "trait", "set", CN, "--trait", "CUSTOM_FAST", "--trait", "HW_CPU_X86_AVX", "--sort-column", "name", ...json),
  at("1.14", "resource", "provider", "show", CN, ...json),
  at("1.6", "resource", "provider", "trait", "list", UNKNOWN),
  at("1.10", "resource", "provider", "aggregate", "set", CN, "--aggregate", AGG, ...json),
  at("1.10", "resource", "provider", "aggregate", "set", CN, "--aggregate", `urn:uuid:${AGG}`),
  at("1.12", "resource", "provider", "allocation", "set", VM, "--allocation", `rp=${CN},VCPU=2,MEMORY_MB=1024`, "--project-id", PROJECT, "--user-id", USER, ...json),
  at("1.12", "resource", "provider", "allocation", "show", VM, ...json),
  at("1.12", "resource", "provider", "allocation", "set", VM2, "--allocation", `rp=${CN},VCPU=500`, "--project-id", PROJECT, "--user-id", USER),
  at("1.12", "resource", "provider", "allocation", "set", VM2, "--allocation", `rp=${CN},VCPU=0`, "--project-id", PROJECT, "--user-id", USER),
  at("1.12", "resource", "provider", "allocation", "set", VM2, "--allocation", `rp=${UNKNOWN},VCPU=1`, "--project-id", PROJECT, "--user-id", USER),
  at("1.17", "allocation", "candidate", "list", "--resource", "VCPU=1", "--required", "CUSTOM_FAST", ...json),
  at("1.17", "allocation", "candidate", "list", "--resource", "VCPU=1000"),
  at("1.9", "resource", "usage", "show", PROJECT, ...json),
  ["resource", "provider", "usage", "show", CN, ...json],
  at("1.14", "resource", "provider", "show", UNKNOWN),
  at("1.14", "resource", "provider", "delete", CN),
  ["resource", "provider", "inventory", "delete", CN, "--resource-class", "VCPU"],
  at("1.12", "resource", "provider", "allocation", "delete", VM),
  ["resource", "provider", "inventory", "delete", CN, "--resource-class", "VCPU"],
  at("1.14", "resource", "provider", "delete", NUMA),
  at("1.14", "resource", "provider", "delete", CN),
  at("1.14", "resource", "provider", "list", ...json),
];

interface Printed {
  code: number;
  stdout: string;
  stderr: string;
}

/** A candidate's traits are a Python set in Placement: their order changes with every start of the reference. */
const sortTraits = (text: string) =>
  text.replace(/"traits": "([^"]*)"/g, (_, list: string) => `"traits": "${list.split(",").sort().join(",")}"`);

const normalise = (text: string) =>
  sortTraits(text.replace(/req-[0-9a-f-]{36}/g, "req-*").replace(/( {2}Failed validating ).*?( \(HTTP \d+\))/gs, "$1...$2"));

/** Runs the session in one CLI process; asynchronously, since one of the two servers answers from this process. */
function runSession(baseUrl: string): Promise<Printed[]> {
  return new Promise((resolve, reject) => {
    const child = spawn("/usr/bin/python3", [DRIVER, baseUrl], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 480_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`osc-driver.py failed (${code}): ${stderr}`));
      resolve((JSON.parse(stdout) as Printed[]).map((p) => ({ code: p.code, stdout: normalise(p.stdout), stderr: normalise(p.stderr) })));
    });
    child.stdin.end(JSON.stringify(SESSION));
  });
}

describe.skipIf(!!missing)(`the openstack CLI (osc-placement) sees no difference${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let referenceDb: TestDatabase;
  let oursDb: TestDatabase;
  let reference: ReferencePlacement;
  let ours: LiveServer;
  beforeAll(async () => {
    [referenceDb, oursDb] = await Promise.all([createTestDatabase({ migrated: false }), createTestDatabase()]);
    [reference, ours] = await Promise.all([startReferencePlacement({ databaseUrl: referenceDb.url }), startLiveServer(oursDb.url, { LOG_LEVEL: "warn" })]);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([reference?.stop(), ours?.stop()]);
    await Promise.all([referenceDb?.drop(), oursDb?.drop()]);
  });

  it("prints the same for every command of an operator's session", { timeout: 600_000 }, async () => {
    const [theirs, mine] = await Promise.all([runSession(reference.baseUrl), runSession(ours.baseUrl)]);
    // The session must mean something: it succeeds and fails where it is meant to.
    expect(theirs.filter((p) => p.code === 0).length).toBeGreaterThan(20);
    expect(theirs.filter((p) => p.code !== 0).length).toBeGreaterThan(8);
    const differing = SESSION.map((argv, i) => ({ command: `openstack ${argv.join(" ")}`, reference: theirs[i], ours: mine[i] })).filter(
      (d) => JSON.stringify(d.reference) !== JSON.stringify(d.ours),
    );
    expect(differing).toEqual([]);
  });
});
