/**
 * `npm run bench -- candidates [--sizes 1000,10000 | none] [--reference-sizes 1000] [--iterations 20] [--warm-up-seconds 3] [--no-reference] [--allocations K] [--usages N | --no-usages] [--shapes TEXT,...] [--server-heap-mb N] [--keep-data] [--against DIR] [--starts N]`
 *
 * GET /allocation_candidates latency, side by side with the reference
 * Placement (Debian's python3-placement through ../shared/conformance/reference-server),
 * on the same data. For each size it builds two data sets straight in SQL,
 * in both servers' schemas (the table layouts match; Placement calls the
 * aggregates table placement_aggregates):
 *   flat:   N compute nodes (VCPU 32 x16, MEMORY_MB 128 GiB x1.5, DISK_GB 2000),
 *           half with HW_CPU_X86_AVX2, a tenth with CUSTOM_BENCH_SLOW, each in one of 20 aggregates,
 *           and with --allocations K, K consumers on each node (VCPU 2, MEMORY_MB 4096, DISK_GB 20);
 *   nested: N compute nodes, each with 2 NUMA children (VCPU 16, MEMORY_MB 64 GiB,
 *           HW_NUMA_ROOT) each with an SR-IOV PF grandchild (SRIOV_NET_VF 8), and one
 *           shared-storage provider (DISK_GB, MISC_SHARES_VIA_AGGREGATE) per aggregate of 50 nodes.
 *   usages: 1,000 compute nodes and N consumers (default 100,000) in 100 projects, each
 *           holding VCPU 1 and MEMORY_MB 512 on one node; GET /usages?project_id= of one
 *           project (what Nova counts quota from on every boot with unified limits).
 * Requests are sequential (one client), in alternating blocks per server (see measure), after warm-up; it prints p50/p95/p99,
 * the response size and the number of candidates, and our server's peak RSS
 * (VmHWM) and its start-up time: our server is started afresh on the
 * built data for each query, and timed from spawning it to its first 200
 * answer of that query (the cloud view's copy, when the cloud is small
 * enough to copy, is read for that answer). A server that refuses a query
 * or dies answering it gets a row saying so instead of figures, ours is
 * started again for the next query, and the table still comes out, with the
 * number of processes that died. --server-heap-mb replaces `npm start`'s
 * heap limit for our server (to see what a smaller worker holds).
 * --keep-data keeps our data sets (databases bench_candidates_ours_*) for
 * the next run, which reuses them instead of building them again.
 * --against DIR also starts the build in DIR (another checkout of this
 * project with its dist/ built, say a worktree at an older commit; its
 * migrations must be ours or older) on the same databases as ours, measures
 * it in the same alternating blocks (started afresh for each query, as ours
 * is), and adds the column "ours / against
 * p50" (above 1: ours is slower). --starts N measures each query N times,
 * each time on servers started afresh, and prints the median of their
 * percentiles: how fast one process of Node.js answers a large query
 * varies from one start to the next by more than the gap between two close
 * builds (a few tens of percent on the 10,000-tree unlimited answer, with
 * the collector's work), so one start per build compares starts, not
 * builds. Not a test: it prints figures and asserts nothing.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { runMigrations } from "../src/db/migrate.js";
import { freePort } from "../src/net.js";

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const REFERENCE = path.resolve(ROOT, "../shared/conformance/reference-server");

interface Options {
  sizes: number[];
  referenceSizes: number[];
  iterations: number;
  /** Seconds of untimed requests each server gets first, at least (measure). */
  warmUpSeconds: number;
  /** Consumers holding VCPU 2, MEMORY_MB 4096, DISK_GB 20 on every flat node (0: an empty cloud). */
  allocations: number;
  /** Consumers of the GET /usages data set (0: not measured). */
  usages: number;
  /** Only the shapes whose name contains one of these (all when empty). */
  shapes: string[];
  /** Our server's heap limit in MB (undefined: `npm start`'s). */
  serverHeapMb?: number;
  /** Another checkout whose built server is measured beside ours (--against). */
  against?: string;
  /** Keep our data sets between runs (builtDb): not dropped at the end, and reused when already built. */
  keepData?: boolean;
  /** Times each query is measured on servers started afresh (--starts): the rows give the median of their figures. */
  starts: number;
}

/** The root of another checkout given to --against, whose server must be built (its dist/). */
export function builtCheckout(dir: string): string {
  const root = path.resolve(dir);
  if (!existsSync(path.join(root, "dist/src/cli.js"))) throw new Error(`--against ${root}: no dist/src/cli.js there (run npm run build in it)`);
  return root;
}

function parseArgs(args: string[]): Options {
  const opts: Options = { sizes: [1000, 10000], referenceSizes: [1000], iterations: 20, warmUpSeconds: 3, allocations: 0, usages: 100_000, shapes: [], starts: 1 };
  for (let i = 0; i < args.length; i++) {
    const next = () => args[++i] ?? "";
    if (args[i] === "--sizes") opts.sizes = next().split(",").filter((x) => x !== "" && x !== "none").map(Number);
    else if (args[i] === "--reference-sizes") opts.referenceSizes = next().split(",").filter(Boolean).map(Number);
    else if (args[i] === "--iterations") opts.iterations = Number(next());
    else if (args[i] === "--warm-up-seconds") opts.warmUpSeconds = Number(next());
    else if (args[i] === "--no-reference") opts.referenceSizes = [];
    else if (args[i] === "--allocations") opts.allocations = Number(next());
    else if (args[i] === "--usages") opts.usages = Number(next());
    else if (args[i] === "--no-usages") opts.usages = 0;
    else if (args[i] === "--shapes") opts.shapes = next().split(",").filter(Boolean);
    else if (args[i] === "--server-heap-mb") opts.serverHeapMb = Number(next());
    else if (args[i] === "--against") opts.against = builtCheckout(next());
    else if (args[i] === "--keep-data") opts.keepData = true;
    else if (args[i] === "--starts") opts.starts = Math.max(1, Number(next()));
  }
  return opts;
}

export interface Shape {
  name: string;
  variant: "flat" | "nested" | "usages";
  query: string;
  /** The request, when it is not GET /allocation_candidates?query. */
  path?: string;
  /** The microversion asked for (default 1.39). */
  microversion?: string;
}

const AGG = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;

export const SHAPES: Shape[] = [
  { name: "plain, limit=1000", variant: "flat", query: "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=1000" },
  { name: "plain, no limit", variant: "flat", query: "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10" },
  { name: "required + forbidden traits", variant: "flat", query: "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&required=HW_CPU_X86_AVX2,!CUSTOM_BENCH_SLOW" },
  { name: "member_of", variant: "flat", query: `resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&member_of=${AGG(3)}` },
  {
    name: "nested granular isolate, limit=1000",
    variant: "nested",
    query: "resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10&resources_N1=SRIOV_NET_VF:1&resources_N2=SRIOV_NET_VF:1&group_policy=isolate&limit=1000",
  },
  {
    name: "nested granular isolate, no limit",
    variant: "nested",
    query: "resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10&resources_N1=SRIOV_NET_VF:1&resources_N2=SRIOV_NET_VF:1&group_policy=isolate",
  },
];

/**
 * At 1.9, as Nova asks (its placement client's usages version): the
 * reference answers 1.38 and later with a 500 on PostgreSQL (a GROUP BY it
 * does not write; docs/placement-bugs.md).
 */
const USAGES_SHAPE: Shape = {
  name: "GET /usages?project_id= (1,000 of the consumers)",
  variant: "usages",
  query: "",
  path: "/usages?project_id=bench-p7",
  microversion: "1.9",
};

/**
 * The usages data set: 1,000 flat nodes and `consumers` consumers spread
 * over 100 projects and over the nodes, each holding VCPU 1 and MEMORY_MB 512.
 */
async function loadUsages(url: string, server: "ours" | "reference", consumers: number): Promise<void> {
  await load(url, "flat", 1000, server);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`INSERT INTO projects (external_id) SELECT 'bench-p' || p FROM generate_series(0, 99) p`);
    await c.query(`INSERT INTO users (external_id) VALUES ('bench')`);
    await c.query(`INSERT INTO consumers (uuid, project_id, user_id, generation)
                   SELECT md5('u' || k)::uuid::text, (SELECT id FROM projects WHERE external_id = 'bench-p' || (k % 100)), (SELECT id FROM users), 0
                   FROM generate_series(1, ${consumers}) k`);
    const consumer = server === "ours" ? "c.id" : "c.uuid";
    await c.query(`INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
                   SELECT rp.id, ${consumer}, rc.id, CASE rc.name WHEN 'VCPU' THEN 1 ELSE 512 END
                   FROM generate_series(1, ${consumers}) k
                   JOIN consumers c ON c.uuid = md5('u' || k)::uuid::text
                   JOIN resource_providers rp ON rp.name = 'cn' || (1 + k % 1000)
                   JOIN resource_classes rc ON rc.name IN ('VCPU', 'MEMORY_MB')`);
    await c.query("VACUUM ANALYZE");
  } finally {
    await c.end();
  }
}

/**
 * Builds one data set in a database that already has the server's schema and
 * standard classes/traits. `noChangeFeed` (ours only, when no server of ours
 * runs on the database yet): our change feed's triggers are off while it
 * builds. With them on, every statement's commit sequences each provider it
 * touched and records its whole state (provider_changes_sequence), which
 * was most of the build's time at 100,000 nodes; a server started after the
 * build reads the cloud whole anyway, and one already running would follow
 * the feed, so only the bench's own build, before its server starts, skips it.
 */
export async function load(url: string, variant: "flat" | "nested", n: number, server: "ours" | "reference", allocations = 0, noChangeFeed = false): Promise<void> {
  const aggTable = server === "ours" ? "aggregates" : "placement_aggregates";
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const q = (text: string) => c.query(text);
  const feed = noChangeFeed ? await changeFeedTriggers(c) : [];
  for (const t of feed) await q(`ALTER TABLE ${t.table} DISABLE TRIGGER ${t.name}`);
  const inv = (where: string, rc: string, total: number, ratio: number, maxUnit = total) =>
    q(`INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
       SELECT rp.id, rc.id, ${total}, 0, 1, ${maxUnit}, 1, ${ratio} FROM resource_providers rp, resource_classes rc
       WHERE rc.name = '${rc}' AND ${where}`);
  const trait = (where: string, name: string) =>
    q(`INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
       SELECT rp.id, t.id FROM resource_providers rp, traits t WHERE t.name = '${name}' AND ${where}`);
  try {
    await q(`INSERT INTO traits (name) SELECT 'CUSTOM_BENCH_SLOW' WHERE NOT EXISTS (SELECT 1 FROM traits WHERE name = 'CUSTOM_BENCH_SLOW')`);
    await q(`INSERT INTO ${aggTable} (uuid) SELECT '00000000-0000-4000-8000-' || lpad(a::text, 12, '0') FROM generate_series(0, ${Math.ceil(n / 50)}) a`);
    await q(`INSERT INTO resource_providers (uuid, name, generation)
             SELECT md5('cn' || g)::uuid::text, 'cn' || g, 0 FROM generate_series(1, ${n}) g`);
    await q(`UPDATE resource_providers SET root_provider_id = id`);
    const cn = `rp.name LIKE 'cn%'`;
    if (variant === "flat") {
      await inv(cn, "VCPU", 32, 16);
      await inv(cn, "MEMORY_MB", 131072, 1.5);
      await inv(cn, "DISK_GB", 2000, 1);
      await trait(`${cn} AND substring(rp.name, 3)::int % 2 = 0`, "HW_CPU_X86_AVX2");
      await trait(`${cn} AND substring(rp.name, 3)::int % 10 = 0`, "CUSTOM_BENCH_SLOW");
      await q(`INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
               SELECT rp.id, a.id FROM resource_providers rp JOIN ${aggTable} a
                 ON a.uuid = '00000000-0000-4000-8000-' || lpad((substring(rp.name, 3)::int % 20)::text, 12, '0')`);
      if (allocations > 0) await allocate(q, server, allocations);
    } else {
      for (const k of [0, 1]) {
        await q(`INSERT INTO resource_providers (uuid, name, generation, parent_provider_id, root_provider_id)
                 SELECT md5('numa${k}_' || substring(cn.name, 3))::uuid::text, 'numa${k}_' || substring(cn.name, 3), 0, cn.id, cn.id
                 FROM resource_providers cn WHERE cn.name LIKE 'cn%'`);
        await q(`INSERT INTO resource_providers (uuid, name, generation, parent_provider_id, root_provider_id)
                 SELECT md5('pf${k}_' || substring(numa.name, 7))::uuid::text, 'pf${k}_' || substring(numa.name, 7), 0, numa.id, numa.root_provider_id
                 FROM resource_providers numa WHERE numa.name LIKE 'numa${k}_%'`);
      }
      await inv(`rp.name LIKE 'numa%'`, "VCPU", 16, 4);
      await inv(`rp.name LIKE 'numa%'`, "MEMORY_MB", 65536, 1);
      await trait(`rp.name LIKE 'numa%'`, "HW_NUMA_ROOT");
      await inv(`rp.name LIKE 'pf%'`, "SRIOV_NET_VF", 8, 1);
      await q(`INSERT INTO resource_providers (uuid, name, generation)
               SELECT md5('ss' || a)::uuid::text, 'ss' || a, 0 FROM generate_series(0, ${Math.ceil(n / 50) - 1}) a`);
      await q(`UPDATE resource_providers SET root_provider_id = id WHERE root_provider_id IS NULL`);
      await inv(`rp.name LIKE 'ss%'`, "DISK_GB", 100000, 1, 10000);
      await trait(`rp.name LIKE 'ss%'`, "MISC_SHARES_VIA_AGGREGATE");
      await q(`INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
               SELECT rp.id, a.id FROM resource_providers rp JOIN ${aggTable} a
                 ON a.uuid = '00000000-0000-4000-8000-' || lpad(
                      CASE WHEN rp.name LIKE 'ss%' THEN substring(rp.name, 3)::int ELSE substring(rp.name, 3)::int / 50 END::text, 12, '0')
               WHERE rp.name LIKE 'cn%' OR rp.name LIKE 'ss%'`);
    }
    for (const t of feed) await q(`ALTER TABLE ${t.table} ENABLE TRIGGER ${t.name}`);
    // Vacuumed as well as analyzed: autovacuum would otherwise visit the freshly loaded tables during
    // the first shape's measurement, on whichever server's database it picked.
    await q("VACUUM ANALYZE");
  } finally {
    await c.end();
  }
}

/** The statement triggers that feed our change feed (migration 0010: `<table>_changes_<op>`). */
async function changeFeedTriggers(c: pg.Client): Promise<Array<{ table: string; name: string }>> {
  const { rows } = await c.query<{ table: string; name: string }>(
    `SELECT tgrelid::regclass::text AS table, tgname AS name FROM pg_trigger
     WHERE NOT tgisinternal AND tgfoid = ANY(ARRAY['provider_changes_from_rows'::regproc, 'provider_changes_from_providers'::regproc])`,
  );
  return rows;
}

/**
 * `perNode` consumers on every compute node, each holding VCPU 2, MEMORY_MB
 * 4096 and DISK_GB 20. Placement's allocations name the consumer by uuid, ours
 * by the consumers row's id.
 */
async function allocate(q: (text: string) => Promise<unknown>, server: "ours" | "reference", perNode: number): Promise<void> {
  await q(`INSERT INTO projects (external_id) VALUES ('bench')`);
  await q(`INSERT INTO users (external_id) VALUES ('bench')`);
  await q(`INSERT INTO consumers (uuid, project_id, user_id, generation)
           SELECT md5('c' || rp.id || '_' || k)::uuid::text, (SELECT id FROM projects), (SELECT id FROM users), 0
           FROM resource_providers rp, generate_series(1, ${perNode}) k WHERE rp.name LIKE 'cn%'`);
  const consumer = server === "ours" ? "c.id" : "c.uuid";
  await q(`INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
           SELECT rp.id, ${consumer}, rc.id, CASE rc.name WHEN 'VCPU' THEN 2 WHEN 'MEMORY_MB' THEN 4096 ELSE 20 END
           FROM resource_providers rp CROSS JOIN generate_series(1, ${perNode}) k
           JOIN consumers c ON c.uuid = md5('c' || rp.id || '_' || k)::uuid::text
           JOIN resource_classes rc ON rc.name IN ('VCPU', 'MEMORY_MB', 'DISK_GB')
           WHERE rp.name LIKE 'cn%'`);
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export async function createDb(name: string): Promise<string> {
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
  });
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

export const dropDb = (name: string) => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));

export interface Server {
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** How a server process ended ("exit code 1", "signal SIGABRT"), or undefined while it runs. */
function endOf(proc: ChildProcess): string | undefined {
  if (proc.signalCode !== null) return `signal ${proc.signalCode}`;
  if (proc.exitCode !== null) return `exit code ${proc.exitCode}`;
  return undefined;
}

/** How a server process ended, waiting up to `ms` for it to end (a process that dies drops its connections a moment before it is reaped). */
async function endWithin(proc: ChildProcess, ms: number): Promise<string | undefined> {
  if (endOf(proc) === undefined) await Promise.race([new Promise((r) => proc.once("exit", r)), new Promise((r) => setTimeout(r, ms))]);
  return endOf(proc);
}

/** A signal to a process group; one that no longer exists (the server died with all its workers) is no error. */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

async function waitReady(port: number, proc: ChildProcess, seconds: number): Promise<void> {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    if (proc.exitCode !== null) throw new Error(`server on ${port} exited with ${proc.exitCode}`);
    try {
      await fetch(`http://127.0.0.1:${port}/`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  throw new Error(`server on ${port} did not start`);
}

function start(cmd: string, args: string[], env: Record<string, string>, port: number): Server {
  // Own process group, so stopping it also stops what it forked (uwsgi workers).
  const proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"], detached: true });
  let stderr = "";
  proc.stderr?.on("data", (b) => (stderr = (stderr + String(b)).slice(-4000)));
  proc.on("exit", (code, signal) => {
    if ((code !== null && code !== 0 && code !== 143) || (signal !== null && signal !== "SIGTERM")) {
      process.stderr.write(`server ${port} ended (${endOf(proc)}): ${stderr}\n`);
    }
  });
  return {
    port,
    proc,
    stop: async () => {
      if (proc.pid === undefined) return;
      // Also when the process itself has ended: workers it forked may still be in its group.
      const running = endOf(proc) === undefined;
      const exited = new Promise((r) => proc.once("exit", r));
      signalGroup(proc.pid, "SIGTERM");
      if (running) await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (endOf(proc) === undefined) signalGroup(proc.pid, "SIGKILL");
    },
  };
}

/** Node's arguments from `npm start` of the checkout at `root` (its heap limit included), so the bench measures what production runs. */
export function startArguments(root = ROOT): string[] {
  const script = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start;
  const [node, ...args] = script.split(/\s+/);
  if (node !== "node") throw new Error(`unexpected start script: ${script}`);
  return args.map((a) => (a.endsWith(".js") ? path.join(root, a) : a));
}

/**
 * Our server (`npm start`'s arguments, one worker) on `url`; `env` adds settings (the replica bench's read URL),
 * `heapMb` replaces the heap limit, `root` is another checkout's build (--against).
 */
export async function startOurs(url: string, port: number, env: Record<string, string> = {}, heapMb?: number, root = ROOT): Promise<Server> {
  const args = startArguments(root).map((a) => (heapMb !== undefined && a.startsWith("--max-old-space-size=") ? `--max-old-space-size=${heapMb}` : a));
  const s = start(
    process.execPath,
    args,
    { PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: url, PLACEMENT_AUTH_STRATEGY: "noauth2", PLACEMENT_ALLOW_NOAUTH: "true", PLACEMENT_WORKERS: "1", LOG_LEVEL: "warn", ...env },
    port,
  );
  await waitReady(port, s.proc, 60);
  return s;
}

async function startReference(url: string, port: number): Promise<Server> {
  const s = start(REFERENCE, [String(port), url.replace(/^postgresql:/, "postgresql+psycopg2:")], {}, port);
  await waitReady(port, s.proc, 180);
  // Placement syncs standard traits on its first API request: make one before loading data.
  await get(port, "/traits?name=in:MISC_SHARES_VIA_AGGREGATE");
  return s;
}

/**
 * One connection per server kept open between requests, through node's own
 * HTTP client: undici's fetch, which this bench used first, spent about twice
 * the client CPU per request, and on two cores the client's CPU is taken from
 * the server being measured (most visibly on answers of a few milliseconds).
 */
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** A GET timed from sending to the body's last byte; a kept-open socket the server had closed is retried (and timed) afresh. */
function get(port: number, pathAndQuery: string, microversion = "1.39"): Promise<{ ms: number; bytes: number; body: string; status: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.get(
      { host: "127.0.0.1", port, path: pathAndQuery, agent, headers: { "x-auth-token": "admin", "openstack-api-version": `placement ${microversion}`, accept: "application/json" } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const ms = performance.now() - t0;
          const bytes = Buffer.concat(chunks);
          // Decoded only when read (the first answer of each server), not for every timed one.
          resolve({ ms, bytes: bytes.length, status: res.statusCode ?? 0, get body() { return bytes.toString("utf8"); } });
        });
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (req.reusedSocket && error.code === "ECONNRESET") get(port, pathAndQuery, microversion).then(resolve, reject);
      else reject(error);
    });
  });
}

/** Peak resident set of a process (VmHWM), in MB. */
function peakRssMb(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** A server that failed a query: it answered an error, or it dropped the connection (it may have died). */
class ServerFailed extends Error {
  constructor(
    readonly server: string,
    why: string,
  ) {
    super(`${server}: ${why}`);
  }
}

/** The specific part of a Placement error's detail (after the status's standard explanation), or the start of any other body. */
function errorDetail(body: string): string {
  try {
    const detail = String((JSON.parse(body) as { errors: Array<{ detail: string }> }).errors[0].detail);
    return detail.split("\n\n").pop()!.trim();
  } catch {
    return body.slice(0, 300);
  }
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

interface Row {
  size: number;
  shape: string;
  server: string;
  p50: number;
  p95: number;
  p99: number;
  kb: number;
  candidates: number;
  /** Peak resident memory of our server process that answered the query (started for it). */
  rss?: number;
  /** Why this server has no figures for this query (it refused it, or died answering it). */
  failure?: string;
  /** Seconds from spawning our server on the built data to its first 200 answer of the query (startTimed). */
  startup?: number;
}

/**
 * One row per server of the rows of its starts (--starts): the median of
 * each figure; a server that failed in any start keeps that start's row.
 * The p50s of each start go to stderr.
 */
function medianRows(rows: Row[]): Row[] {
  const servers = [...new Set(rows.map((r) => r.server))];
  return servers.map((server) => {
    const of = rows.filter((r) => r.server === server);
    const failed = of.find((r) => r.failure !== undefined);
    if (failed || of.length === 1) return failed ?? of[0];
    process.stderr.write(`${of[0].shape}, ${server}: p50 of each start ${of.map((r) => r.p50.toFixed(1)).join(", ")}\n`);
    const median = (pick: (r: Row) => number | undefined): number | undefined => {
      const values = of.map(pick).filter((v): v is number => v !== undefined);
      return values.length === 0 ? undefined : pct(values.sort((a, b) => a - b), 50);
    };
    return { ...of[0], p50: median((r) => r.p50)!, p95: median((r) => r.p95)!, p99: median((r) => r.p99)!, rss: median((r) => r.rss), startup: median((r) => r.startup) };
  });
}

/** Requests per block, and how many at the start of each block are not timed. */
const BLOCK = 10;
const UNTIMED = 2;

/**
 * Measures one query on every server in alternating blocks of BLOCK
 * requests, so a machine whose load changes during the run (it is shared)
 * weighs on all servers alike, and times all but the first UNTIMED requests
 * of each block. Alternating request by request (as this bench first did)
 * times every request right after the other server's: a process idle for
 * that long pays this virtual machine's wake-up cost (a Node hello-world
 * server here: p50 0.9 ms back to back, 1.8 ms after 30 ms idle, 3.5 ms
 * after 100 ms), which is a property of the machine, not of either server,
 * and which swamps a 3 ms answer next to a 30 ms one. `warmUps` untimed
 * requests per server come first (fewer for answers that take the
 * reference seconds), and they go on until each server has also been
 * warmed for `warmUpSeconds` of its own requests: a Node server's JIT
 * reaches its steady state only after some thousands of calls of its hot
 * functions, which twenty requests of a millisecond do not give it, and a
 * production server answering a scheduler all day is in that steady state.
 * The same rule applies to both servers (equal time, not equal counts), so
 * an answer of seconds is warmed by `warmUps` alone.
 */
export async function measure(
  servers: Array<{ name: string; port: number }>,
  shape: Shape,
  iterations: number,
  warmUps = 20,
  warmUpSeconds = 0,
): Promise<Array<Omit<Row, "size" | "shape" | "rss">>> {
  const q = shape.path ?? `/allocation_candidates?${shape.query}`;
  // Any failure is a ServerFailed naming the server, so a caller can go on without it.
  const ask = async (s: { name: string; port: number }) => {
    const answer = await get(s.port, q, shape.microversion).catch((error: Error) => {
      throw new ServerFailed(s.name, `${error.message} (connection lost)`);
    });
    if (answer.status !== 200) throw new ServerFailed(s.name, `${answer.status}: ${errorDetail(answer.body)}`);
    return answer;
  };
  const firsts: Array<Awaited<ReturnType<typeof get>>> = [];
  for (const s of servers) {
    firsts.push(await ask(s));
    // Warm-up: the JIT, the pools and PostgreSQL's caches, before anything is timed.
    const until = performance.now() + warmUpSeconds * 1000;
    for (let i = 0; i < warmUps || performance.now() < until; i++) await ask(s);
  }
  const times: number[][] = servers.map(() => []);
  while (times[0].length < iterations) {
    for (let k = 0; k < servers.length; k++) {
      for (let i = 0; i < BLOCK; i++) {
        const ms = (await ask(servers[k])).ms;
        if (i >= UNTIMED && times[k].length < iterations) times[k].push(ms);
      }
    }
  }
  return servers.map((s, k) => {
    const sorted = times[k].sort((a, b) => a - b);
    return {
      server: s.name,
      p50: pct(sorted, 50),
      p95: pct(sorted, 95),
      p99: pct(sorted, 99),
      kb: firsts[k].bytes / 1024,
      candidates: (JSON.parse(firsts[k].body) as { allocation_requests?: unknown[] }).allocation_requests?.length ?? 0,
    };
  });
}

/** The servers measured on one data set: ours is started again on `ourUrl` if it dies, a reference (or against) that dies is left out. */
interface Fleet {
  ours: Server;
  ourUrl: string;
  heapMb?: number;
  ref?: Server;
  /** The --against build, on ours's database. */
  against?: Server;
  /** Server processes that died so far (the bench's own count, printed under the table). */
  deaths: number;
}

/**
 * measure() on the fleet's servers, going on without a server that fails:
 * it gets a row saying why (its answer, or how its process ended), and our
 * server, if it died, is started again for the queries after this one.
 */
async function measureSurviving(fleet: Fleet, shape: Shape, iterations: number, warmUps: number, warmUpSeconds: number): Promise<Array<Omit<Row, "size" | "shape">>> {
  const out: Array<Omit<Row, "size" | "shape">> = [];
  let names = ["ours", ...(fleet.against ? ["against"] : []), ...(fleet.ref ? ["reference"] : [])];
  const serverOf = (name: string) => (name === "ours" ? fleet.ours : name === "against" ? fleet.against! : fleet.ref!);
  while (names.length > 0) {
    const servers = names.map((name) => ({ name, port: serverOf(name).port }));
    try {
      for (const r of await measure(servers, shape, iterations, warmUps, warmUpSeconds)) {
        out.push({ ...r, rss: r.server === "ours" ? peakRssMb(fleet.ours.proc.pid) : undefined });
      }
      return out;
    } catch (error) {
      if (!(error instanceof ServerFailed)) throw error;
      const failed = serverOf(error.server);
      const end = await endWithin(failed.proc, 3000);
      let failure = end ? `died (${end})` : error.message.slice(error.server.length + 2);
      process.stderr.write(`${shape.name}: ${error.message}${end ? `; the process ended (${end})` : ""}\n`);
      names = names.filter((n) => n !== error.server);
      if (end) {
        fleet.deaths++;
        await failed.stop();
        if (error.server === "ours") {
          fleet.ours = await startOurs(fleet.ourUrl, await freePort(), {}, fleet.heapMb);
          failure += ", started again";
        } else if (error.server === "against") {
          fleet.against = undefined;
        } else {
          fleet.ref = undefined;
        }
      }
      out.push({ server: error.server, p50: NaN, p95: NaN, p99: NaN, kb: NaN, candidates: NaN, failure });
    }
  }
  return out;
}

/** The --against build on `url` (ours's database, migrated and loaded), when asked for. */
const startAgainst = async (opts: Options, url: string) =>
  opts.against === undefined ? undefined : startOurs(url, await freePort(), {}, opts.serverHeapMb, opts.against);

const selected = (opts: Options, shape: Shape) => opts.shapes.length === 0 || opts.shapes.some((text) => shape.name.includes(text));

export default async function (args: string[]): Promise<void> {
  const opts = parseArgs(args);
  const rows: Row[] = [];
  let peak = 0;
  let deaths = 0;
  for (const size of opts.sizes) {
    for (const variant of ["flat", "nested"] as const) {
      if (!SHAPES.some((s) => s.variant === variant && selected(opts, s))) continue;
      const withReference = opts.referenceSizes.includes(size);
      const ourDb = `bench_candidates_ours_${variant}_${size}`;
      const refDb = `bench_candidates_ref_${variant}_${size}`;
      // Ours is built before its server starts (so without the change feed, see load), and kept with --keep-data.
      const ourUrl = await builtDb(ourDb, variant, size, opts);
      const ref = withReference ? await startReference(await createDb(refDb), await freePort()) : undefined;
      if (ref) await load(dbUrl(refDb), variant, size, "reference", opts.allocations);
      let fleet: Fleet | undefined;
      try {
        for (const shape of SHAPES.filter((s) => s.variant === variant && selected(opts, s))) {
          // Unlimited queries over 10,000 trees take long (and the reference takes seconds): fewer rounds.
          const slow = withReference || (!shape.query.includes("limit") && size > 1000);
          const iterations = slow ? Math.max(5, Math.floor(opts.iterations / 2)) : opts.iterations;
          // The reference at 10,000 nodes takes seconds per answer: a few warm-ups, not twenty.
          const warmUps = withReference && size > 1000 ? 3 : 20;
          const measured: Row[] = [];
          for (let start = 0; start < opts.starts; start++) {
            // A server of ours started afresh for each query: the time to its first answer, and its peak RSS, are this query's.
            const started = await startTimed(ourUrl, shape, opts.serverHeapMb, fleet?.ours);
            fleet ??= { ours: started.server, ourUrl, heapMb: opts.serverHeapMb, ref, deaths: 0 };
            fleet.ours = started.server;
            // The --against build on ours's data, started afresh for each query too, so both come to it equally warm.
            await fleet.against?.stop();
            fleet.against = await startAgainst(opts, ourUrl);
            const startup = started.seconds;
            for (const r of await measureSurviving(fleet, shape, iterations, warmUps, opts.warmUpSeconds)) {
              measured.push({ size, shape: shape.name, ...r, startup: r.server === "ours" ? startup : undefined });
            }
            peak = Math.max(peak, peakRssMb(fleet.ours.proc.pid));
          }
          rows.push(...medianRows(measured));
          process.stderr.write(`${size} ${variant} ${shape.name}: done\n`);
        }
      } finally {
        // Also after a failure: no server outlives the bench.
        deaths += fleet?.deaths ?? 0;
        await fleet?.ours.stop();
        await fleet?.against?.stop();
        await (fleet?.ref ?? ref)?.stop();
        if (!opts.keepData) await dropDb(ourDb);
        if (withReference) await dropDb(refDb);
      }
    }
  }
  if (opts.usages > 0) {
    const withReference = opts.referenceSizes.length > 0;
    const ourDb = "bench_usages_ours";
    const refDb = "bench_usages_ref";
    const fleet: Fleet = { ours: await startOurs(await createDb(ourDb), await freePort(), {}, opts.serverHeapMb), ourUrl: dbUrl(ourDb), heapMb: opts.serverHeapMb, deaths: 0 };
    await loadUsages(dbUrl(ourDb), "ours", opts.usages);
    fleet.against = await startAgainst(opts, fleet.ourUrl);
    const ref = withReference ? await startReference(await createDb(refDb), await freePort()) : undefined;
    if (ref) {
      fleet.ref = ref;
      await loadUsages(dbUrl(refDb), "reference", opts.usages);
    }
    try {
      for (const r of await measureSurviving(fleet, USAGES_SHAPE, opts.iterations, 20, opts.warmUpSeconds)) rows.push({ size: opts.usages, shape: USAGES_SHAPE.name, ...r });
      process.stderr.write(`${opts.usages} consumers usages: done\n`);
    } finally {
      deaths += fleet.deaths;
      await fleet.ours.stop();
      await fleet.against?.stop();
      await ref?.stop();
      await dropDb(ourDb);
      if (withReference) await dropDb(refDb);
    }
  }
  print(rows, peak, deaths, opts.against !== undefined);
}

/**
 * The database `name` holding the data set, built now unless --keep-data
 * finds it built by an earlier run (the database's comment says which data
 * set it holds, written once the build is whole): the schema is migrated,
 * then the data loaded before any server of ours runs on it.
 */
async function builtDb(name: string, variant: "flat" | "nested", size: number, opts: Options): Promise<string> {
  const mark = `bench data set: ${variant} ${size} allocations ${opts.allocations}`;
  if (opts.keepData) {
    const found = await admin((c) => c.query<{ mark: string | null }>(`SELECT shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE datname = $1`, [name]));
    if (found.rows[0]?.mark === mark) {
      process.stderr.write(`${size} ${variant}: data set kept from an earlier run (${name})\n`);
      return dbUrl(name);
    }
  }
  const url = await createDb(name);
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await runMigrations(pool);
  } finally {
    await pool.end();
  }
  const t0 = performance.now();
  await load(url, variant, size, "ours", opts.allocations, true);
  process.stderr.write(`${size} ${variant}: data set built in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
  await admin((c) => c.query(`COMMENT ON DATABASE ${name} IS '${mark}'`));
  return url;
}

/**
 * Our server started on `url` (after stopping `previous`), and the seconds
 * from spawning it to its first 200 answer of `shape` (undefined when it
 * answers otherwise: measure then reports the failure).
 */
async function startTimed(url: string, shape: Shape, heapMb: number | undefined, previous?: Server): Promise<{ server: Server; seconds?: number }> {
  await previous?.stop();
  const t0 = performance.now();
  const server = await startOurs(url, await freePort(), {}, heapMb);
  const first = await get(server.port, shape.path ?? `/allocation_candidates?${shape.query}`, shape.microversion).catch(() => undefined);
  return { server, seconds: first?.status === 200 ? (performance.now() - t0) / 1000 : undefined };
}

function dbUrl(db: string): string {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${db}`;
  return u.toString();
}

function print(rows: Row[], peak: number, deaths: number, against: boolean): void {
  const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
  const lines = [
    `| nodes | query | server | p50 ms | p95 ms | p99 ms | candidates | response KB | reference p50 / ours p50 |${against ? " ours / against p50 |" : ""} our peak RSS MB | our start-up to first answer s |`,
    `|---|---|---|---|---|---|---|---|---|${against ? "---|" : ""}---|---|`,
  ];
  const measured = (r: Row, server: string) => rows.find((x) => x.size === r.size && x.shape === r.shape && x.server === server && x.failure === undefined);
  for (const r of rows) {
    if (r.failure !== undefined) {
      lines.push(`| ${r.size} | ${r.shape} | ${r.server} | failed: ${r.failure} | | | | | |${against ? " |" : ""} | |`);
      continue;
    }
    const ref = measured(r, "reference");
    const ratio = r.server === "ours" && ref ? `${(ref.p50 / r.p50).toFixed(1)}x` : "";
    const base = measured(r, "against");
    const versus = against ? ` ${r.server === "ours" && base ? (r.p50 / base.p50).toFixed(2) : ""} |` : "";
    const rss = r.rss === undefined ? "" : r.rss.toFixed(0);
    const startup = r.startup === undefined ? "" : r.startup.toFixed(1);
    lines.push(`| ${r.size} | ${r.shape} | ${r.server} | ${f(r.p50)} | ${f(r.p95)} | ${f(r.p99)} | ${r.candidates} | ${f(r.kb)} | ${ratio} |${versus} ${rss} | ${startup} |`);
  }
  lines.push("", `our server's peak RSS (VmHWM, one process): ${peak.toFixed(0)} MB`, `server processes that died: ${deaths}`);
  process.stdout.write(`${lines.join("\n")}\n`);
}
