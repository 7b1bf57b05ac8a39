/**
 * `npm run bench -- claims [--providers N] [--clients K[,K...]] [--mode M[,M...]] [--cloud flat|aggregate]
 *  [--pick pack|random] [--limit L] [--claims M] [--workers W] [--connections keep-alive,close]`
 *
 * K simulated schedulers fill a cloud of N compute nodes (4 VCPU, 8 GiB,
 * 400 GB each; every claim takes 1 VCPU, 2 GiB, 100 GB, so each node holds
 * exactly 4 claims) through the real server over HTTP, until nothing fits.
 * With --cloud aggregate, 50 of the N nodes are in one aggregate and every
 * claim is a large flavour (2 VCPU, 4 GiB, 200 GB: two per node) asked for
 * with member_of, so the schedulers fill those 50 nodes (100 claims).
 * With --claims M the schedulers stop after about M successful claims instead
 * of filling the cloud. Several modes run side by side, interleaved per K:
 *   direct      each scheduler claims on a random node not yet known to be full (no query);
 *               with --view shared (default) the K schedulers share what they learn from
 *               409s, as the workers of one scheduler process share its host state; with
 *               --view own each learns alone (every node then costs each scheduler one 409)
 *   list        GET /resource_providers?resources=... (1.4 capacity filter), claim one of them
 *   candidates  the standard loop: GET /allocation_candidates?resources=...&limit=L, pick one
 *               (--pick pack: the fullest, as Nova's packing weighers; random: any), PUT it,
 *               and on a 409 start again
 *   claim       POST /claims?resources=...&limit=L with the same pick: select and claim in one
 *               transaction (the extension); a 409 means nothing fits
 * --connections: each scheduler's requests over one kept-alive connection (keep-alive), or each
 * request on a connection of its own, closed after it (close: as a client without a pool, or behind
 * a proxy that does not keep connections); a list runs each, interleaved like the modes.
 * Prints claims per second, 409s per successful claim (for claim: 409s answered before the last
 * successful claim was sent, i.e. while there was still room), p50/p99 latency of a successful
 * claim (from its scheduler's first request for it), and the invariant check read from the tables
 * (nothing over capacity, the cloud exactly full, one allocation set per successful claim). Not a
 * test: it asserts nothing about time. Needs PostgreSQL at DATABASE_URL (default: the local postgres
 * superuser); it creates and drops a scratch database per run.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import http from "node:http";
import os from "node:os";
import pg from "pg";
import { freePort } from "../src/net.js";
import { startArguments } from "./candidates.js";

const NODE = { VCPU: 4, MEMORY_MB: 8192, DISK_GB: 400 };
const FLAVOURS = {
  flat: { claim: { VCPU: 1, MEMORY_MB: 2048, DISK_GB: 100 }, perNode: 4 },
  aggregate: { claim: { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 200 }, perNode: 2 },
} as const;
/** Nodes in the aggregate of --cloud aggregate. */
const AGGREGATE_NODES = 50;
const AGGREGATE = "4b0c6d2e-8f1a-4c3b-9d5e-6f7a8b9c0d1e";
const MODES = ["direct", "list", "candidates", "claim"] as const;
type Mode = (typeof MODES)[number];
const CONNECTIONS = ["keep-alive", "close"] as const;
type Connections = (typeof CONNECTIONS)[number];

interface Options {
  providers: number;
  clients: number[];
  modes: Mode[];
  cloud: "flat" | "aggregate";
  pick: "pack" | "random";
  limit: number;
  /** Stop after this many successful claims instead of filling the cloud (a busy machine cannot fill 4,000 slots six times). */
  maxClaims: number;
  view: "shared" | "own";
  workers: number;
  connections: Connections[];
  adminUrl: string;
}

/** What the schedulers ask for, per cloud. */
function workload(options: Options) {
  const { claim, perNode } = FLAVOURS[options.cloud];
  const resources = Object.entries(claim)
    .map(([k, v]) => `${k}:${v}`)
    .join(",");
  const memberOf = options.cloud === "aggregate" ? `&member_of=${AGGREGATE}` : "";
  const nodes = options.cloud === "aggregate" ? Math.min(AGGREGATE_NODES, options.providers) : options.providers;
  return { claim, resources, query: `resources=${resources}${memberOf}&limit=${options.limit}`, capacity: nodes * perNode };
}

function parseArgs(args: string[]): Options {
  const get = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const modes = (get("mode") ?? "candidates,claim").split(",") as Mode[];
  for (const m of modes) if (!MODES.includes(m)) throw new Error(`unknown --mode ${m}`);
  const cloud = get("cloud") ?? "flat";
  if (cloud !== "flat" && cloud !== "aggregate") throw new Error(`unknown --cloud ${cloud}`);
  const connections = (get("connections") ?? "keep-alive,close").split(",") as Connections[];
  for (const c of connections) if (!CONNECTIONS.includes(c)) throw new Error(`unknown --connections ${c}`);
  const pick = get("pick") ?? "pack";
  if (pick !== "pack" && pick !== "random") throw new Error(`unknown --pick ${pick}`);
  return {
    providers: Number(get("providers") ?? 1000),
    clients: (get("clients") ?? "1,4,16").split(",").map(Number),
    modes,
    cloud,
    pick,
    limit: Number(get("limit") ?? 20),
    maxClaims: Number(get("claims") ?? Infinity),
    view: get("view") === "own" ? "own" : "shared",
    workers: Number(get("workers") ?? os.availableParallelism()),
    connections,
    adminUrl: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres",
  };
}


async function startServer(databaseUrl: string, workers: number): Promise<{ base: string; child: ChildProcess }> {
  const port = await freePort();
  // BENCH_CPU_PROF=DIR writes a V8 CPU profile of the server (use --workers 1) to DIR.
  const profile = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // As `npm start` runs it (its heap settings included), like the candidates bench.
  const child = spawn(process.execPath, [...profile, ...startArguments()], {
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

type Send = (method: string, url: string, microversion: string, body?: string) => Promise<{ status: number; body: Buffer }>;

/**
 * One HTTP request with node:http (lighter on the client's CPU than fetch,
 * and the client shares the machine's two cores with the server): over the
 * scheduler's kept-alive connection, or without an agent on a connection of
 * its own that the server is asked to close.
 */
function sender(connections: Connections): Send {
  const agent = connections === "keep-alive" ? new http.Agent({ keepAlive: true, maxSockets: 1 }) : false;
  return (method, url, microversion, body) =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { ...HEADERS, "openstack-api-version": `placement ${microversion}` };
      if (connections === "close") headers.connection = "close";
      if (body !== undefined) headers["content-length"] = String(Buffer.byteLength(body));
      const req = http.request(url, { method, agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(body);
    });
}

/** The cloud, written straight into the tables: setting up 1000 nodes over HTTP is not what is measured. */
async function buildCloud(db: pg.Client, n: number, cloud: Options["cloud"]): Promise<string[]> {
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
  if (cloud === "aggregate") {
    // The aggregate's nodes are spread over the id range, as hosts of one rack are not the first ones created.
    await db.query("INSERT INTO aggregates (uuid) VALUES ($1)", [AGGREGATE]);
    await db.query(
      `INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
       SELECT rp.id, a.id FROM resource_providers rp, aggregates a WHERE rp.id % $1 = 0 ORDER BY rp.id LIMIT $2`,
      [Math.max(1, Math.floor(n / AGGREGATE_NODES)), AGGREGATE_NODES],
    );
  }
  return uuids;
}

interface Tally {
  claims: number;
  conflicts: number;
  errors: number;
  /** Milliseconds from a scheduler's first request for an instance to its successful claim. */
  latencies: number[];
  /** claim mode: when each successful claim was sent, and when each 409 came back. */
  lastSuccessSent: number;
  refusals: number[];
}

type CandidatesBody = {
  allocation_requests: Array<{ allocations: Record<string, unknown> }>;
  provider_summaries: Record<string, { resources: Record<string, { capacity: number; used: number }> }>;
};

const REQUEST_OPEN = Buffer.from('{"allocations":{"');
const SUMMARIES_KEY = Buffer.from('"provider_summaries":');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The random pick: the provider of one allocation request, any of them,
 * found in the bytes of the answer (from 1.12 a request opens with
 * `{"allocations":{"<uuid>"`) without decoding or parsing it. The client
 * shares the machine's two cores with the server it measures, and parsing a
 * thousand allocation requests cost it about as much CPU as the server spends
 * answering the query.
 */
function randomCandidate(body: Buffer): string | undefined {
  const end = body.indexOf(SUMMARIES_KEY);
  if (end < 0) throw new Error(`not a candidates answer: ${body.subarray(0, 200).toString()}`);
  const starts: number[] = [];
  for (let at = body.indexOf(REQUEST_OPEN); at >= 0 && at < end; at = body.indexOf(REQUEST_OPEN, at + REQUEST_OPEN.length)) {
    starts.push(at + REQUEST_OPEN.length);
  }
  if (starts.length === 0) return undefined;
  const from = starts[Math.floor(Math.random() * starts.length)];
  const uuid = body.toString("latin1", from, from + 36);
  if (!UUID.test(uuid)) throw new Error(`no provider uuid where an allocation request opens: ${uuid}`);
  return uuid;
}

/** The packing pick: the node that would be fullest after the claim, as Nova's packing weighers choose. */
function packedCandidate(body: CandidatesBody, claim: Record<string, number>): string | undefined {
  const nodes = body.allocation_requests.map((r) => Object.keys(r.allocations)[0]);
  if (nodes.length === 0) return undefined;
  const fill = (node: string) => {
    const res = body.provider_summaries[node].resources;
    const classes = Object.keys(claim);
    return classes.reduce((sum, rc) => sum + (res[rc].used + claim[rc]) / res[rc].capacity, 0) / classes.length;
  };
  return nodes.reduce((best, n) => (fill(n) > fill(best) ? n : best));
}

/** claim mode: POST /claims until it answers that nothing fits. */
async function claimer(base: string, options: Options, send: Send, tally: Tally): Promise<void> {
  const { query } = workload(options);
  while (tally.claims < options.maxClaims) {
    const started = performance.now();
    const res = await send(
      "POST",
      `${base}/claims?${query}`,
      "1.39",
      JSON.stringify({
        consumers: [{ consumer_uuid: randomUUID(), project_id: "bench-project", user_id: "bench-user", consumer_type: "INSTANCE" }],
        pick: options.pick,
      }),
    );
    if (res.status === 200) {
      tally.claims++;
      tally.latencies.push(performance.now() - started);
      tally.lastSuccessSent = Math.max(tally.lastSuccessSent, started);
      continue;
    }
    if (res.status === 409) tally.refusals.push(performance.now());
    else {
      tally.errors++;
      if (tally.errors <= 3) process.stderr.write(`unexpected ${res.status} from POST /claims: ${res.body.toString().slice(0, 500)}\n`);
    }
    return;
  }
}

/** One scheduler: pick a node, claim on it, until it finds none with room. */
async function scheduler(base: string, options: Options, mode: Mode, send: Send, notFull: Set<string>, tally: Tally): Promise<void> {
  const { claim, resources, query } = workload(options);
  let started = performance.now();
  while (tally.claims < options.maxClaims) {
    let node: string | undefined;
    if (mode === "direct") {
      const choices = [...notFull];
      node = choices[Math.floor(Math.random() * choices.length)];
    } else if (mode === "list") {
      const res = await send("GET", `${base}/resource_providers?resources=${resources}`, "1.4");
      const choices = (JSON.parse(res.body.toString()) as { resource_providers: Array<{ uuid: string }> }).resource_providers.map((p) => p.uuid);
      node = choices[Math.floor(Math.random() * choices.length)];
    } else {
      const res = await send("GET", `${base}/allocation_candidates?${query}`, "1.39");
      if (res.status !== 200) throw new Error(`unexpected ${res.status} from GET /allocation_candidates: ${res.body.toString().slice(0, 500)}`);
      node = options.pick === "random" ? randomCandidate(res.body) : packedCandidate(JSON.parse(res.body.toString()) as CandidatesBody, claim);
    }
    if (node === undefined) return;
    const res = await send(
      "PUT",
      `${base}/allocations/${randomUUID()}`,
      "1.39",
      JSON.stringify({
        allocations: { [node]: { resources: claim } },
        project_id: "bench-project",
        user_id: "bench-user",
        consumer_generation: null,
        consumer_type: "INSTANCE",
      }),
    );
    if (res.status === 204) {
      tally.claims++;
      tally.latencies.push(performance.now() - started);
      started = performance.now();
    } else if (res.status === 409) {
      tally.conflicts++;
      notFull.delete(node);
    } else {
      tally.errors++;
      notFull.delete(node);
      if (tally.errors <= 3) process.stderr.write(`unexpected ${res.status} from PUT /allocations: ${res.body.toString().slice(0, 500)}\n`);
    }
  }
}

async function invariants(db: pg.Client, options: Options, tally: Tally): Promise<string> {
  const { capacity } = workload(options);
  const over = await db.query("SELECT count(*)::int AS n FROM provider_capacity WHERE used > capacity");
  // Free VCPU where the schedulers were asked to fill: the aggregate's nodes, or every node.
  const free = await db.query(
    `SELECT COALESCE(SUM(pc.free), 0)::int AS n FROM provider_capacity pc JOIN resource_providers rp ON rp.uuid = pc.provider_uuid
     WHERE pc.resource_class = 'VCPU' AND (NOT $1 OR rp.id IN (SELECT resource_provider_id FROM resource_provider_aggregates))`,
    [options.cloud === "aggregate"],
  );
  const consumers = await db.query("SELECT count(*)::int AS n FROM consumers");
  const problems: string[] = [];
  if (over.rows[0].n !== 0) problems.push(`${over.rows[0].n} inventories over capacity`);
  const filling = !Number.isFinite(options.maxClaims);
  if (filling && free.rows[0].n !== 0) problems.push(`${free.rows[0].n} VCPU left free`);
  if (consumers.rows[0].n !== tally.claims) problems.push(`${consumers.rows[0].n} consumers for ${tally.claims} successful claims`);
  if (filling && tally.claims !== capacity) problems.push(`${tally.claims} claims, capacity was ${capacity}`);
  const full = filling ? ", cloud exactly full" : "";
  return problems.length === 0 ? `OK (nothing over capacity${full}, one consumer per successful claim)` : `FAILED: ${problems.join("; ")}`;
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]);

async function runOnce(options: Options, mode: Mode, connections: Connections, k: number): Promise<void> {
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
    const nodes = await buildCloud(db, options.providers, options.cloud);
    const tally: Tally = { claims: 0, conflicts: 0, errors: 0, latencies: [], lastSuccessSent: 0, refusals: [] };
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const shared = new Set(nodes);
    await Promise.all(
      Array.from({ length: k }, () => {
        const send = sender(connections);
        return mode === "claim"
          ? claimer(server.base, options, send, tally)
          : scheduler(server.base, options, mode, send, options.view === "shared" ? shared : new Set(nodes), tally);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const clientCpu = (cpu.user + cpu.system) / 1e6;
    // A claim's 409 is wasted only if it came back while there was still room (before the last success was sent).
    if (mode === "claim") tally.conflicts = tally.refusals.filter((at) => at < tally.lastSuccessSent).length;
    const check = await invariants(db, options, tally);
    const sorted = [...tally.latencies].sort((a, b) => a - b);
    const label = `${mode}${mode === "direct" ? `/${options.view}` : ""}${mode === "candidates" || mode === "claim" ? `/${options.pick}` : ""} ${connections}`;
    // One row of the table the default export heads: markdown as printed, for docs/benchmarks.md.
    const row = [
      `${options.cloud} ${options.providers}`,
      k,
      label,
      tally.claims,
      seconds.toFixed(1),
      (tally.claims / seconds).toFixed(0),
      (tally.conflicts / Math.max(tally.claims, 1)).toFixed(3),
      percentile(sorted, 50).toFixed(1),
      percentile(sorted, 99).toFixed(1),
      tally.errors,
      clientCpu.toFixed(1),
      check,
    ];
    process.stdout.write(`| ${row.join(" | ")} |\n`);
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
    `claims benchmark: server workers ${options.workers}, cloud ${options.cloud}, limit ${options.limit}\n\n` +
      "| cloud, nodes | K | mode, connections | claims | seconds | claims/s | 409s per claim | p50 ms | p99 ms | other errors | client CPU s | invariants |\n" +
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n",
  );
  // Modes interleaved per K, so a change in the machine's load touches all of them alike.
  for (const k of options.clients) for (const mode of options.modes) for (const c of options.connections) await runOnce(options, mode, c, k);
}
