/**
 * `npm run bench -- candidates --replica [--nodes 1000] [--rounds 4] [--block-seconds 8] [--readers 4] [--writers 4] [--query Q]`
 *
 * GET /allocation_candidates with candidates on a hot standby
 * (PLACEMENT_READ_DATABASE_URL) while writers load the primary, against the
 * same load on one server. One primary (initdb) and one streaming standby
 * (pg_basebackup -R) on spare loopback ports, the flat data set of
 * `npm run bench -- candidates` (N compute nodes), and two of our servers
 * over that primary, one worker each: "one server" (DATABASE_URL only) and
 * "replica" (DATABASE_URL plus the standby for reads). In each block,
 * `readers` clients ask for candidates back to back and `writers` clients
 * claim and free allocations (PUT then DELETE /allocations/{new consumer}
 * on a random node) through the server of that block. Blocks alternate
 * A B B A ... so a change in the machine's load (it is shared) weighs on both
 * alike; the first second of every block is not counted. It prints p50/p95
 * of the candidates requests, candidates and writes per second, where the
 * replica server's reads were served (its metrics); --markdown heads it with
 * the machine (bench/markdown.ts).
 * On one machine the standby shares the primary's CPUs and disk: the figures
 * show the cost of routing and the effect of taking the reads' snapshots and
 * buffer traffic off the primary, not the capacity of a second machine.
 * Not a test: it prints figures and asserts nothing.
 */
import { randomUUID } from "node:crypto";
import { freePort } from "../src/net.js";
import { clusterToolsMissing, startPrimary, startStandby, waitForReplay, type Cluster } from "../test/support/clusters.js";
import { load, startOurs, type Server } from "./candidates.js";

/** Spare ports of the replicas engineer's range (TEAM.md), away from the replica tests' ports. */
const PRIMARY_PORT = 20430;
const STANDBY_PORT = 20431;
const ADMIN_HEADERS = { "x-auth-token": "admin", "openstack-api-version": "placement 1.39", accept: "application/json" };

interface Options {
  nodes: number;
  rounds: number;
  blockSeconds: number;
  readers: number;
  writers: number;
  query: string;
}

function parseArgs(args: string[]): Options {
  const opts: Options = { nodes: 1000, rounds: 4, blockSeconds: 8, readers: 4, writers: 4, query: "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=1000" };
  for (let i = 0; i < args.length; i++) {
    const next = () => args[++i] ?? "";
    if (args[i] === "--nodes") opts.nodes = Number(next());
    else if (args[i] === "--rounds") opts.rounds = Number(next());
    else if (args[i] === "--block-seconds") opts.blockSeconds = Number(next());
    else if (args[i] === "--readers") opts.readers = Number(next());
    else if (args[i] === "--writers") opts.writers = Number(next());
    else if (args[i] === "--query") opts.query = next();
  }
  return opts;
}

type Mode = "one server" | "replica";

interface Block {
  mode: Mode;
  latencies: number[];
  reads: number;
  writes: number;
  failures: number;
  seconds: number;
}

async function call(port: number, method: string, path: string, body?: unknown): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: body === undefined ? ADMIN_HEADERS : { ...ADMIN_HEADERS, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

/** One block: readers and writers against `port` for `seconds`, counting only what ends after the first second. */
async function block(mode: Mode, port: number, nodes: string[], opts: Options): Promise<Block> {
  const start = performance.now();
  const countFrom = start + 1000;
  const end = start + opts.blockSeconds * 1000;
  const out: Block = { mode, latencies: [], reads: 0, writes: 0, failures: 0, seconds: (end - countFrom) / 1000 };
  const reader = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      const status = await call(port, "GET", `/allocation_candidates?${opts.query}`);
      const t1 = performance.now();
      if (status !== 200) out.failures++;
      else if (t1 >= countFrom && t1 <= end) {
        out.latencies.push(t1 - t0);
        out.reads++;
      }
    }
  };
  const project = randomUUID();
  const user = randomUUID();
  const writer = async () => {
    while (performance.now() < end) {
      const consumer = randomUUID();
      const node = nodes[Math.floor(Math.random() * nodes.length)];
      const put = await call(port, "PUT", `/allocations/${consumer}`, {
        allocations: { [node]: { resources: { VCPU: 1, MEMORY_MB: 512, DISK_GB: 10 } } },
        project_id: project,
        user_id: user,
        consumer_generation: null,
        consumer_type: "INSTANCE",
      });
      const del = put === 204 ? await call(port, "DELETE", `/allocations/${consumer}`) : 0;
      if (put !== 204 || del !== 204) out.failures++;
      else if (performance.now() >= countFrom && performance.now() <= end) out.writes += 2;
    }
  };
  await Promise.all([...Array.from({ length: opts.readers }, reader), ...Array.from({ length: opts.writers }, writer)]);
  return out;
}

/** The replica server's own count of where its candidates reads were served, and the standby's lag gauge. */
async function replicaMetrics(port: number): Promise<{ replica: number; primary: number; lag: number }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: ADMIN_HEADERS });
  const text = await res.text();
  const value = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    replica: value(/placement_db_replica_reads_total\{served_by="replica"\} (\S+)/),
    primary: value(/placement_db_replica_reads_total\{served_by="primary"\} (\S+)/),
    lag: value(/placement_db_replica_lag_seconds\{[^}]*\} (\S+)/),
  };
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;

export default async function (args: string[]): Promise<void> {
  const missing = clusterToolsMissing();
  if (missing) {
    process.stderr.write(`candidates --replica: skipped: ${missing}\n`);
    return;
  }
  const opts = parseArgs(args);
  let primary: Cluster | undefined;
  let standby: Cluster | undefined;
  const servers: Server[] = [];
  try {
    primary = await startPrimary({ port: PRIMARY_PORT, settings: { max_connections: "100", shared_buffers: "256MB" } });
    // The first server applies the migrations (and the standard classes and traits) the data set needs.
    const single = await startOurs(primary.url, await freePort());
    servers.push(single);
    await load(primary.url, "flat", opts.nodes, "ours");
    standby = await startStandby(primary, { port: STANDBY_PORT, settings: { shared_buffers: "256MB" } });
    await waitForReplay(primary, standby);
    const routed = await startOurs(primary.url, await freePort(), { PLACEMENT_READ_DATABASE_URL: standby.url, PLACEMENT_METRICS_ON_API_PORT: "true" });
    servers.push(routed);
    const nodes = (await primary.query<{ uuid: string }>("SELECT uuid::text FROM resource_providers ORDER BY id")).map((r) => r.uuid);
    const ports: Record<Mode, number> = { "one server": single.port, replica: routed.port };

    // Warm-up: the JIT, both pools and both servers' caches.
    for (const mode of ["one server", "replica"] as const) await block(mode, ports[mode], nodes, { ...opts, blockSeconds: 3 });
    const before = await replicaMetrics(routed.port);
    const blocks: Block[] = [];
    let maxLag = 0;
    for (let round = 0; round < opts.rounds; round++) {
      const order: Mode[] = round % 2 === 0 ? ["one server", "replica"] : ["replica", "one server"];
      for (const mode of order) {
        blocks.push(await block(mode, ports[mode], nodes, opts));
        if (mode === "replica") maxLag = Math.max(maxLag, (await replicaMetrics(routed.port)).lag);
        process.stderr.write(`round ${round + 1} ${mode}: done\n`);
      }
    }
    const after = await replicaMetrics(routed.port);
    print(blocks, opts, { replica: after.replica - before.replica, primary: after.primary - before.primary, maxLag });
  } finally {
    for (const s of servers) await s.stop();
    await standby?.stop();
    await primary?.stop();
  }
}

function print(blocks: Block[], opts: Options, served: { replica: number; primary: number; maxLag: number }): void {
  const f = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
  const lines = [
    `${opts.nodes} flat nodes, GET /allocation_candidates?${opts.query}; ${opts.readers} readers, ${opts.writers} writers (PUT + DELETE /allocations), ${opts.rounds} rounds of ${opts.blockSeconds} s blocks per mode`,
    "",
    "| mode | candidates p50 ms | p95 ms | candidates/s | writes/s | failed |",
    "|---|---|---|---|---|---|",
  ];
  const summary: Record<string, { p50: number; rate: number; writes: number }> = {};
  for (const mode of ["one server", "replica"] as const) {
    const mine = blocks.filter((b) => b.mode === mode);
    const sorted = mine.flatMap((b) => b.latencies).sort((a, b) => a - b);
    const seconds = mine.reduce((s, b) => s + b.seconds, 0);
    const reads = mine.reduce((s, b) => s + b.reads, 0);
    const writes = mine.reduce((s, b) => s + b.writes, 0);
    const failed = mine.reduce((s, b) => s + b.failures, 0);
    summary[mode] = { p50: pct(sorted, 50), rate: reads / seconds, writes: writes / seconds };
    lines.push(`| ${mode} | ${f(pct(sorted, 50))} | ${f(pct(sorted, 95))} | ${f(reads / seconds)} | ${f(writes / seconds)} | ${failed} |`);
  }
  const one = summary["one server"];
  const rep = summary.replica;
  lines.push(
    "",
    `replica / one server: p50 ${(rep.p50 / one.p50).toFixed(2)}x, candidates/s ${(rep.rate / one.rate).toFixed(2)}x, writes/s ${(rep.writes / one.writes).toFixed(2)}x`,
    "",
    `replica server's candidates reads in the timed blocks: ${served.replica} on the standby, ${served.primary} on the primary; largest lag gauge seen ${served.maxLag.toFixed(3)} s`,
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}
