/**
 * A real client that must not tell the difference: Nova's own placement
 * client (Debian's python3-nova, SchedulerReportClient over keystoneauth and
 * openstacksdk, configured through nova.conf as nova-compute is) runs the
 * same compute-node and scheduler lifecycle (test/clients/nova-driver.py)
 * against the reference Placement and against this server, each on a fresh
 * database. Every call must return the same thing or raise the same
 * exception, send the same requests and get the same statuses, leave the
 * client with the same cached generations, and leave the same state behind.
 *
 * Normalised: request ids; uuids the driver did not choose and timestamps,
 * as symbols in order of first appearance (the driver's own uuids get their
 * names, for readable diffs).
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { pythonModulesUnavailable } from "../support/debian.js";
import { startLiveServer, type LiveServer } from "../support/live-server.js";
import { referenceUnavailable, startReferencePlacement, type ReferencePlacement } from "../support/reference-placement.js";

const DRIVER = new URL("./nova-driver.py", import.meta.url).pathname;

const missing = referenceUnavailable() ?? pythonModulesUnavailable("nova.scheduler.client.report, openstack", "python3-nova", "Nova's placement report client");

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface Step {
  step: string;
  result?: Json;
  raised?: string;
  message?: string;
  sent?: string[];
  cached_generations?: Record<string, number>;
  operator?: string;
  status?: number;
  state?: State;
}

interface ProviderState {
  generation: number;
  inventories: Record<string, { total: number; reserved: number }>;
  traits: string[];
  aggregates: string[];
  usages: Record<string, number>;
}

interface State {
  providers: Record<string, ProviderState>;
  consumers: Record<string, { allocations: Record<string, { resources: Record<string, number> }> }>;
  project_usages: Record<string, number>;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{32}\b/g;
const TIMESTAMP = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?/g;

/** The transcript as text with stable symbols: the driver's uuids by name, any other uuid and timestamp by order of appearance. */
function normalise(names: Record<string, string>, steps: Step[]): Step[] {
  const symbols = new Map<string, string>();
  const text = JSON.stringify(steps)
    .replace(/req-[0-9a-f-]{36}/g, "req-*")
    .replace(UUID, (uuid) => {
      if (names[uuid]) return `<${names[uuid]}>`;
      if (!symbols.has(uuid)) symbols.set(uuid, `<uuid-${symbols.size + 1}>`);
      return symbols.get(uuid) as string;
    })
    .replace(TIMESTAMP, "<timestamp>");
  return JSON.parse(text) as Step[];
}

/** Runs the lifecycle in one driver process; asynchronously, since one of the two servers answers from this process. */
function runLifecycle(baseUrl: string): Promise<Step[]> {
  return new Promise((resolve, reject) => {
    // A fixed hash seed: Nova iterates sets when it sends requests (which traits to create first).
    const env = { ...process.env, PYTHONHASHSEED: "0" };
    const child = spawn("/usr/bin/python3", [DRIVER, baseUrl], { stdio: ["ignore", "pipe", "pipe"], env });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 240_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`nova-driver.py failed (${code}): ${stderr}`));
      const { names, steps } = JSON.parse(stdout) as { names: Record<string, string>; steps: Step[] };
      resolve(normalise(names, steps));
    });
  });
}

const find = (steps: Step[], name: string): Step => {
  const found = steps.find((s) => s.step === name);
  if (!found) throw new Error(`no step "${name}" in the transcript: ${steps.map((s) => s.step).join("\n")}`);
  return found;
};
const stateAt = (steps: Step[], name: string): State => find(steps, name).state as State;

describe.skipIf(!!missing)(`Nova's placement report client sees no difference${missing ? ` (skipped: ${missing})` : ""}`, () => {
  let referenceDb: TestDatabase;
  let oursDb: TestDatabase;
  let reference: ReferencePlacement;
  let ours: LiveServer;
  let theirs: Step[];
  let mine: Step[];
  beforeAll(async () => {
    [referenceDb, oursDb] = await Promise.all([createTestDatabase({ migrated: false }), createTestDatabase()]);
    [reference, ours] = await Promise.all([startReferencePlacement({ databaseUrl: referenceDb.url }), startLiveServer(oursDb.url, { LOG_LEVEL: "warn" })]);
    [theirs, mine] = await Promise.all([runLifecycle(reference.baseUrl), runLifecycle(ours.baseUrl)]);
  }, 300_000);
  afterAll(async () => {
    await Promise.all([reference?.stop(), ours?.stop()]);
    await Promise.all([referenceDb?.drop(), oursDb?.drop()]);
  });

  it("returns, raises, sends and caches the same at every step of the lifecycle", () => {
    // The first step that differs is the one to read: a different generation or outcome there changes every later step.
    const at = theirs.findIndex((s, i) => JSON.stringify(s) !== JSON.stringify(mine[i]));
    expect(at === -1 ? "no difference" : { index: at, step: mine[at] }).toEqual(at === -1 ? "no difference" : { index: at, step: theirs[at] });
    expect(mine.length).toBe(theirs.length);
  });

  it("ran the whole lifecycle, with the outcomes it was built to provoke", () => {
    expect(mine.find((s) => s.step === "aborted")).toBeUndefined();
    const raised = (name: string) => find(mine, name).raised;
    // A write on a generation cached before someone else's write conflicts; the tracker's next attempt goes through.
    expect(raised("compute-1 periodic (a new CPU trait) (attempt 1): update_from_provider_tree")).toBe("ResourceProviderUpdateConflict");
    expect(raised("compute-1 periodic (a new CPU trait) (attempt 2): update_from_provider_tree")).toBeUndefined();
    // Rewriting the same traits keeps the generation (one attempt, one PUT that succeeds); rewriting the same aggregates does not.
    expect(find(mine, "compute-1 periodic (the trait went away) (attempt 1): update_from_provider_tree").sent).toEqual([
      "GET /traits?name=in:HW_CPU_X86_AVX2,CUSTOM_FAST,COMPUTE_VOLUME_MULTI_ATTACH 1.6 -> 200",
      "PUT /resource_providers/<CN1>/traits 1.6 -> 200",
    ]);
    expect(mine.some((s) => s.step.startsWith("compute-1 periodic (the trait went away) (attempt 2)"))).toBe(false);
    expect(raised("compute-1 periodic (the trait is back) (attempt 1): update_from_provider_tree")).toBe("ResourceProviderUpdateConflict");
    expect(raised("compute-2 periodic (the pmem namespaces are gone) (attempt 2): update_from_provider_tree")).toBe("InventoryInUse");
    expect(raised("compute-1 reshapes its vGPUs (attempt 1): update_from_provider_tree with allocations")).toBe("PlacementReshapeConflict");
    expect(raised("compute-1 reshapes its vGPUs (attempt 2): update_from_provider_tree with allocations")).toBeUndefined();
    expect(raised("put_allocations evacuee on a stale consumer generation")).toBe("AllocationUpdateFailed");
    expect(raised("forced evacuation on a stale consumer generation")).toBe("AllocationUpdateFailed");
    for (const claim of ["small-vm on compute-1", "evacuee on compute-1", "pinned-vm on NUMA node 0", "gpu-vm", "pmem-vm", "evacuee on compute-2 (doubled up)"]) {
      expect(find(mine, `scheduler: claim_resources ${claim}`).result, claim).toBe(true);
    }
    expect(find(mine, "scheduler: claim_resources beyond capacity").result).toBe(false);
  });

  it("leaves the usages and placements the lifecycle implies", () => {
    // small-vm and evacuee (2 VCPU, 2048 MB, 20 GB), pinned-vm (2 PCPU, 1024 MB, 10 GB), gpu-vm (1 VCPU + 1 from an
    // attached port, 512 MB, 5 GB, 1 VGPU), pmem-vm (1 VCPU, 512 MB, 5 GB, 1 namespace); disk from the shared provider.
    const scheduled = stateAt(mine, "after scheduling");
    expect(scheduled.project_usages).toEqual({ VCPU: 7, PCPU: 2, MEMORY_MB: 6144, DISK_GB: 60, VGPU: 1, CUSTOM_PMEM_NAMESPACE_4GB: 1 });
    expect(scheduled.providers["shared-storage"].usages).toEqual({ DISK_GB: 60 });
    expect(scheduled.providers["compute-1_numa0"].usages).toEqual({ PCPU: 2 });

    const resizing = stateAt(mine, "during the resize");
    expect(resizing.consumers.MIGRATION1.allocations["<CN1>"].resources).toEqual({ VCPU: 2, MEMORY_MB: 2048 });
    expect(resizing.consumers.SMALL_VM.allocations["<CN2>"].resources).toEqual({ VCPU: 4, MEMORY_MB: 4096 });

    const moved = stateAt(mine, "after the moves");
    expect(Object.keys(moved.consumers.EVACUEE.allocations).sort()).toEqual(["<CN2>", "<SHARED>"]);
    expect(moved.consumers.SMALL_VM.allocations["<CN2>"].resources).toEqual({ VCPU: 4, MEMORY_MB: 4096 });
    expect(moved.consumers.MIGRATION1).toBeUndefined();

    const reshaped = stateAt(mine, "after the reshape");
    expect(Object.keys(reshaped.providers["compute-1"].inventories).sort()).toEqual(["MEMORY_MB", "VCPU"]);
    expect(reshaped.providers["compute-1_pgpu0"].inventories.VGPU.total).toBe(4);
    expect(reshaped.providers["compute-1_pgpu0"].usages).toEqual({ VGPU: 1 });
    expect(reshaped.consumers.GPU_VM.allocations["<PGPU0>"].resources).toEqual({ VGPU: 1 });
    expect(reshaped.providers["compute-1_numa1"].traits).toEqual(["CUSTOM_REPAIRED", "HW_NUMA_ROOT"]);

    const end = stateAt(mine, "at the end");
    expect(Object.keys(end.providers)).toEqual(["shared-storage"]);
    expect(end.providers["shared-storage"].usages).toEqual({ DISK_GB: 0 });
    expect(end.consumers).toEqual({});
    expect(end.project_usages).toEqual({});
  });
});
