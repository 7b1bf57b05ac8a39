/**
 * `npm run bench -- claims [--providers N] [--clients K[,K...]] [--mode direct|list|candidates] [--workers W]`
 *
 * K simulated schedulers fill a cloud of N compute nodes (4 VCPU, 8 GiB,
 * 400 GB each; every claim takes 1 VCPU, 2 GiB, 100 GB, so each node holds
 * exactly 4 claims) through the real server over HTTP, until nothing fits:
 *   direct      each scheduler claims on a random node not yet known to be full (no query);
 *               with --view shared (default) the K schedulers share what they learn from
 *               409s, as the workers of one scheduler process share its host state; with
 *               --view own each learns alone (every node then costs each scheduler one 409)
 *   list        GET /resource_providers?resources=... (1.4 capacity filter), claim one of them
 *   candidates  GET /allocation_candidates?resources=...&limit=..., claim one of them
 * Prints claims per second, 409s per successful claim, and the invariant
 * check read from the tables (nothing over capacity, the cloud exactly full,
 * one allocation set per successful claim). Not a test: it asserts nothing
 * about time. Needs PostgreSQL at DATABASE_URL (default: the local postgres
 * superuser); it creates and drops a scratch database per run.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freePort } from "../src/net.js";

const CLAIM = { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 100 };
const NODE = { VCPU: 4, MEMORY_MB: 8192, DISK_GB: 400 };
const PER_NODE = 4;
const RESOURCES_QUERY = Object.entries(CLAIM)
  .map(([k, v]) => `${k}:${v}`)
  .join(",");

interface Options {
  providers: number;
  clients: number[];
  mode: "direct" | "list" | "candidates";
  view: "shared" | "own";
  workers: number;
  adminUrl: string;
}

function parseArgs(args: string[]): Options {
  const get = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const mode = (get("mode") ?? "direct") as Options["mode"];
  if (!["direct", "list", "candidates"].includes(mode)) throw new Error(`unknown --mode ${mode}`);
  return {
    providers: Number(get("providers") ?? 1000),
    clients: (get("clients") ?? "1,4,16").split(",").map(Number),
    mode,
    view: get("view") === "own" ? "own" : "shared",
    workers: Number(get("workers") ?? os.availableParallelism()),
    adminUrl: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
  };
}


async function startServer(databaseUrl: string, workers: number): Promise<{ base: string; child: ChildProcess }> {
  const port = await freePort();
  const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/cli.js");
  // BENCH_CPU_PROF=DIR writes a V8 CPU profile of the server (use --workers 1) to DIR.
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child = spawn(process.execPath, [...profile, cli, "serve"], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), LOG_LEVEL: "warn", PLACEMENT_WORKERS: String(workers) },
    stdio: ["ignore", "inherit", "inherit"],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/`)).ok) return { base, child };
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("server did not start");
}

const HEADERS = { "x-auth-token": "admin", accept: "application/json", "content-type": "application/json" };

/** The cloud, written straight into the tables: setting up 1000 nodes over HTTP is not what is measured. */
async function buildCloud(db: pg.Client, n: number): Promise<string[]> {
  const uuids = Array.from({ length: n }, () => randomUUID());
  await db.query(
    `INSERT INTO resource_providers (uuid, name) SELECT u, 'compute-' || i FROM unnest($1::text[]) WITH ORDINALITY AS t(u, i)`,
    [uuids],
  );
  await db.query("UPDATE resource_providers SET root_provider_id = id");
  for (const [rc, total] of Object.entries(NODE)) {
    await db.query(
      `INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
       SELECT rp.id, rc.id, $2, 0, 1, $2, 1, 1 FROM resource_providers rp, resource_classes rc WHERE rc.name = $1`,
      [rc, total],
    );
  }
  return uuids;
}

interface Tally {
  claims: number;
  conflicts: number;
  errors: number;
}

/** One scheduler: pick a node, claim on it, until it finds none with room. */
async function scheduler(base: string, options: Options, notFull: Set<string>, tally: Tally): Promise<void> {
  for (;;) {
    let choices: string[];
    if (options.mode === "direct") {
      choices = [...notFull];
    } else if (options.mode === "list") {
      const res = await fetch(`${base}/resource_providers?resources=${RESOURCES_QUERY}`, { headers: { ...HEADERS, "openstack-api-version": "placement 1.4" } });
      choices = ((await res.json()) as { resource_providers: Array<{ uuid: string }> }).resource_providers.map((p) => p.uuid);
    } else {
      const res = await fetch(`${base}/allocation_candidates?resources=${RESOURCES_QUERY}&limit=20&group_policy=none`, {
        headers: { ...HEADERS, "openstack-api-version": "placement 1.39" },
      });
      const body = (await res.json()) as { allocation_requests: Array<{ allocations: Record<string, unknown> }> };
      choices = body.allocation_requests.map((r) => Object.keys(r.allocations)[0]);
    }
    if (choices.length === 0) return;
    const node = choices[Math.floor(Math.random() * choices.length)];
    const res = await fetch(`${base}/allocations/${randomUUID()}`, {
      method: "PUT",
      headers: { ...HEADERS, "openstack-api-version": "placement 1.39" },
      body: JSON.stringify({
        allocations: { [node]: { resources: CLAIM } },
        project_id: "bench-project",
        user_id: "bench-user",
        consumer_generation: null,
        consumer_type: "INSTANCE",
      }),
    });
    const body = await res.text();
    if (res.status === 204) tally.claims++;
    else if (res.status === 409) {
      tally.conflicts++;
      notFull.delete(node);
    } else {
      tally.errors++;
      notFull.delete(node);
      if (tally.errors <= 3) process.stderr.write(`unexpected ${res.status} from PUT /allocations: ${body.slice(0, 500)}\n`);
    }
  }
}

async function invariants(db: pg.Client, n: number, tally: Tally): Promise<string> {
  const over = await db.query("SELECT count(*)::int AS n FROM provider_capacity WHERE used > capacity");
  const free = await db.query("SELECT COALESCE(SUM(free), 0)::int AS n FROM provider_capacity WHERE resource_class = 'VCPU'");
  const consumers = await db.query("SELECT count(*)::int AS n FROM consumers");
  const problems: string[] = [];
  if (over.rows[0].n !== 0) problems.push(`${over.rows[0].n} inventories over capacity`);
  if (free.rows[0].n !== 0) problems.push(`${free.rows[0].n} VCPU left free`);
  if (consumers.rows[0].n !== tally.claims) problems.push(`${consumers.rows[0].n} consumers for ${tally.claims} successful claims`);
  if (tally.claims !== n * PER_NODE) problems.push(`${tally.claims} claims, capacity was ${n * PER_NODE}`);
  return problems.length === 0 ? "OK (nothing over capacity, cloud exactly full, one consumer per successful claim)" : `FAILED: ${problems.join("; ")}`;
}

async function runOnce(options: Options, k: number): Promise<void> {
  const name = `bench_claims_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: options.adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(options.adminUrl);
  url.pathname = `/${name}`;
  const server = await startServer(url.toString(), options.workers);
  const db = new pg.Client({ connectionString: url.toString() });
  await db.connect();
  try {
    const nodes = await buildCloud(db, options.providers);
    const tally: Tally = { claims: 0, conflicts: 0, errors: 0 };
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const shared = new Set(nodes);
    await Promise.all(Array.from({ length: k }, () => scheduler(server.base, options, options.view === "shared" ? shared : new Set(nodes), tally)));
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const clientCpu = (cpu.user + cpu.system) / 1e6;
    const check = await invariants(db, options.providers, tally);
    process.stdout.write(
      `N=${options.providers} K=${String(k).padStart(2)} mode=${options.mode}${options.mode === "direct" ? `/${options.view}` : ""}: ${tally.claims} claims in ${seconds.toFixed(1)} s = ` +
        `${(tally.claims / seconds).toFixed(0)} claims/s; ${(tally.conflicts / Math.max(tally.claims, 1)).toFixed(3)} 409s per claim; ` +
        `${tally.errors} other errors; client CPU ${clientCpu.toFixed(1)} s; invariants ${check}\n`,
    );
  } finally {
    await db.end();
    server.child.kill("SIGTERM");
    await new Promise((r) => server.child.once("exit", r));
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

export default async function (args: string[]): Promise<void> {
  const options = parseArgs(args);
  process.stdout.write(
    `claims benchmark: ${os.cpus().length} CPU(s) ${os.cpus()[0]?.model ?? ""}, node ${process.version}, server workers ${options.workers}\n`,
  );
  for (const k of options.clients) await runOnce(options, k);
}
