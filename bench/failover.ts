/**
 * `npm run bench -- failover [--clients 8] [--before 8] [--after 40] [--base-port 20330]`
 *
 * The recommended topology, built on loopback from Debian's packages: etcd,
 * two Patroni nodes (PostgreSQL 15, synchronous_mode so that a commit the
 * primary acknowledged is on the standby too), HAProxy routing to whichever
 * node answers Patroni's REST check GET /primary, and the server pointed at
 * HAProxy. Schedulers (bench/faults/workload.ts: candidates, then a claim,
 * retried after a 503 as a careful client does) run `--before` seconds, then
 * the primary is killed (Patroni and its postmaster, SIGKILL: the machine
 * died), and they run on for `--after` seconds. Afterwards, read from the new
 * primary: every acknowledged claim present exactly once and nothing over
 * capacity (bench/faults/invariants.ts); it prints the outage window (from
 * the kill to the first claim acknowledged after it), the answers by status,
 * and the failover as Patroni saw it. Not a test: it prints and asserts
 * nothing, but exits 1 when an invariant is broken.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, chown, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { postgresBin } from "../test/support/clusters.js";
import { broken, checkInvariants } from "./faults/invariants.js";
import { startSoakServer, type SoakServer } from "./faults/server.js";
import { Workload, type Outcome } from "./faults/workload.js";

interface Options {
  clients: number;
  beforeSeconds: number;
  afterSeconds: number;
  basePort: number;
}

function parseArgs(args: string[]): Options {
  const opts: Options = { clients: 8, beforeSeconds: 8, afterSeconds: 40, basePort: 20330 };
  for (let i = 0; i < args.length; i++) {
    const next = () => Number(args[++i]);
    if (args[i] === "--clients") opts.clients = next();
    else if (args[i] === "--before") opts.beforeSeconds = next();
    else if (args[i] === "--after") opts.afterSeconds = next();
    else if (args[i] === "--base-port") opts.basePort = next();
  }
  return opts;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isRoot = process.getuid?.() === 0;

/** Why the topology cannot be built here, or undefined. */
function missing(): string | undefined {
  for (const [bin, pkg] of [["/usr/bin/patroni", "patroni"], ["/usr/bin/etcd", "etcd-server"], ["/usr/sbin/haproxy", "haproxy"]]) {
    if (!existsSync(bin)) return `${bin} not found (apt-get install ${pkg})`;
  }
  if (!postgresBin()) return "PostgreSQL server binaries not found under /usr/lib/postgresql";
  // Debian's patroni depends on any one of its stores' clients: with another one installed, it has no etcd.
  try {
    execFileSync("/usr/bin/python3", ["-c", "import etcd"], { stdio: "ignore" });
  } catch {
    return "Patroni's etcd client is missing (apt-get install python3-etcd)";
  }
  return undefined;
}

/** A process of the topology; its output is kept for when something goes wrong. */
interface Proc {
  name: string;
  child: ChildProcess;
  output(): string;
}

function launch(name: string, argv: string[], asPostgres: boolean): Proc {
  const full = asPostgres && isRoot ? ["runuser", "-u", "postgres", "--", ...argv] : argv;
  const child = spawn(full[0], full.slice(1), { stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  const keep = (d: Buffer) => (out = (out + String(d)).slice(-20_000));
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return { name, child, output: () => out };
}

function killGroup(p: Proc, signal: NodeJS.Signals): void {
  if (p.child.pid !== undefined && p.child.exitCode === null) {
    try {
      process.kill(-p.child.pid, signal);
    } catch {
      // already gone
    }
  }
}

async function waitUntil<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
}

async function status(url: string): Promise<number | undefined> {
  return fetch(url, { signal: AbortSignal.timeout(1_000) }).then((r) => r.status, () => undefined);
}

interface Node {
  name: string;
  pgPort: number;
  restPort: number;
  dataDir: string;
  proc?: Proc;
}

function patroniConfig(node: Node, etcdPort: number, dir: string): string {
  const bin = postgresBin()!;
  // loop_wait/ttl/retry_timeout: Patroni's smallest sensible values, so that the bench is bounded in time.
  return `scope: placement-bench
name: ${node.name}
restapi:
  listen: 127.0.0.1:${node.restPort}
  connect_address: 127.0.0.1:${node.restPort}
etcd3:
  hosts: 127.0.0.1:${etcdPort}
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: false
      parameters:
        max_connections: 100
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 5
        max_replication_slots: 5
        fsync: "off"
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:${node.pgPort}
  connect_address: 127.0.0.1:${node.pgPort}
  data_dir: ${node.dataDir}
  bin_dir: ${bin}
  pgpass: ${path.join(dir, `pgpass-${node.name}`)}
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
  parameters:
    unix_socket_directories: ${dir}
tags:
  nofailover: false
`;
}

function haproxyConfig(port: number, statsPort: number, nodes: Node[]): string {
  // Patroni's REST API answers GET /primary 200 only on the primary: HAProxy sends connections there alone,
  // and cuts the ones it holds to a node that stops being it (on-marked-down shutdown-sessions).
  return `global
  maxconn 1000
defaults
  mode tcp
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  timeout check 1s
listen stats
  mode http
  bind 127.0.0.1:${statsPort}
  stats enable
  stats uri /
listen postgres
  bind 127.0.0.1:${port}
  option httpchk GET /primary
  http-check expect status 200
  default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
${nodes.map((n) => `  server ${n.name} 127.0.0.1:${n.pgPort} maxconn 100 check port ${n.restPort}`).join("\n")}
`;
}

/** The node whose REST API says it is the primary now. */
async function primaryNode(nodes: Node[]): Promise<Node | undefined> {
  for (const n of nodes) if ((await status(`http://127.0.0.1:${n.restPort}/primary`)) === 200) return n;
  return undefined;
}

/** Workload that also keeps, per claim answered, when and how, for the outage window. */
class TimedWorkload extends Workload {
  readonly timeline: Array<{ at: number; outcome: Outcome; write: boolean }> = [];
  override async send(method: string, pathAndQuery: string, body?: unknown) {
    const answer = await super.send(method, pathAndQuery, body);
    this.timeline.push({ at: performance.now(), outcome: answer.outcome, write: method === "PUT" });
    return answer;
  }
}

export default async function (args: string[]): Promise<void> {
  const opts = parseArgs(args);
  const why = missing();
  if (why) {
    process.stdout.write(`failover bench skipped: ${why}\n`);
    return;
  }
  const p = opts.basePort;
  const etcdPort = p;
  const nodes: Node[] = [
    { name: "pg1", pgPort: p + 2, restPort: p + 4, dataDir: "" },
    { name: "pg2", pgPort: p + 3, restPort: p + 5, dataDir: "" },
  ];
  const haproxyPort = p + 6;
  const dir = await mkdtemp(path.join(os.tmpdir(), "placement-failover-"));
  await chmod(dir, 0o700);
  // PostgreSQL, Patroni and etcd run as postgres (PostgreSQL refuses root): the directory is theirs.
  if (isRoot) await chown(dir, Number(execFileSync("id", ["-u", "postgres"]).toString()), Number(execFileSync("id", ["-g", "postgres"]).toString()));
  for (const n of nodes) n.dataDir = path.join(dir, n.name);
  const procs: Proc[] = [];
  let server: SoakServer | undefined;
  try {
    const etcd = launch(
      "etcd",
      [
        "/usr/bin/etcd", "--name", "bench", "--data-dir", path.join(dir, "etcd"),
        "--listen-client-urls", `http://127.0.0.1:${etcdPort}`, "--advertise-client-urls", `http://127.0.0.1:${etcdPort}`,
        "--listen-peer-urls", `http://127.0.0.1:${p + 1}`, "--initial-advertise-peer-urls", `http://127.0.0.1:${p + 1}`,
        "--initial-cluster", `bench=http://127.0.0.1:${p + 1}`
      ],
      true,
    );
    procs.push(etcd);
    await waitUntil("etcd", 30_000, async () => ((await status(`http://127.0.0.1:${etcdPort}/health`)) === 200 ? true : undefined));

    // The first node bootstraps the cluster; the second joins it as a standby (pg_basebackup by Patroni).
    for (const n of nodes) {
      const file = path.join(dir, `${n.name}.yml`);
      await writeFile(file, patroniConfig(n, etcdPort, dir));
      n.proc = launch(`patroni ${n.name}`, ["/usr/bin/patroni", file], true);
      procs.push(n.proc);
      if (n === nodes[0]) await waitUntil("the first Patroni node to lead", 90_000, async () => ((await status(`http://127.0.0.1:${n.restPort}/primary`)) === 200 ? true : undefined));
    }
    await waitUntil("the second node to stream synchronously", 120_000, async () => {
      const r = await fetch(`http://127.0.0.1:${nodes[0].restPort}/cluster`, { signal: AbortSignal.timeout(1_000) });
      const members = ((await r.json()) as { members: Array<{ name: string; role: string; state: string }> }).members;
      return members.some((m) => m.name === "pg2" && m.role === "sync_standby" && /streaming|running/.test(m.state)) ? true : undefined;
    });

    const haCfg = path.join(dir, "haproxy.cfg");
    await writeFile(haCfg, haproxyConfig(haproxyPort, p + 7, nodes));
    procs.push(launch("haproxy", ["/usr/sbin/haproxy", "-db", "-f", haCfg], false));
    const stableUrl = `postgresql://postgres@127.0.0.1:${haproxyPort}/postgres`;
    await waitUntil("HAProxy to reach the primary", 30_000, async () => {
      const c = new pg.Client({ connectionString: stableUrl, connectionTimeoutMillis: 1_000 });
      await c.connect();
      const { rows } = await c.query("SELECT pg_is_in_recovery() AS r");
      await c.end();
      return rows[0].r === false ? true : undefined;
    });

    server = await startSoakServer({
      DATABASE_URL: stableUrl,
      PLACEMENT_WORKERS: "2",
      PLACEMENT_DB_POOL_SIZE: "8",
      PLACEMENT_AUTH_STRATEGY: "noauth2",
      PLACEMENT_ALLOW_NOAUTH: "true",
      LOG_LEVEL: "error",
      PLACEMENT_DB_ACQUIRE_TIMEOUT_MS: "2000",
    });
    const workload = new TimedWorkload({ baseUrls: [server.baseUrl], retries: 60, hangAfterMs: 30_000 });
    // Room for every claim the run can make: the invariants are about correctness, not a full cloud.
    await workload.createProviders(40, 512, 512 * 1024);

    let stop!: () => void;
    const done = new Promise<void>((r) => (stop = r));
    const clients = Array.from({ length: opts.clients }, async () => {
      let finished = false;
      void done.then(() => (finished = true));
      while (!finished) await workload.schedule();
    });
    await sleep(opts.beforeSeconds * 1000);

    const old = await primaryNode(nodes);
    if (!old) throw new Error("no primary before the kill");
    const postmaster = Number(readFileSync(path.join(old.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    const killedAt = performance.now();
    killGroup(old.proc!, "SIGKILL");
    process.kill(postmaster, "SIGKILL");
    process.stderr.write(`failover: killed ${old.name} (Patroni and postmaster ${postmaster})\n`);
    const promotedAt = await waitUntil("a new primary", 60_000, async () => {
      const now = await primaryNode(nodes);
      return now && now !== old ? performance.now() : undefined;
    });
    await sleep(opts.afterSeconds * 1000);
    stop();
    await Promise.all(clients);

    // The outage: the longest stretch without an acknowledged claim from just before the kill on (a backend
    // of the killed postmaster may still commit for a moment, so the first claim after the kill is no measure).
    const writes = workload.timeline.filter((e) => e.write);
    const acked = [...writes.filter((e) => e.outcome === 204 && e.at >= killedAt - 1000).map((e) => e.at)];
    let lastBefore = killedAt;
    let firstAfter: number | undefined;
    for (let i = 1; i < acked.length; i++) {
      if (firstAfter === undefined || acked[i] - acked[i - 1] > firstAfter - lastBefore) [lastBefore, firstAfter] = [acked[i - 1], acked[i]];
    }
    const byStatus = new Map<string, number>();
    for (const e of workload.timeline) byStatus.set(String(e.outcome), (byStatus.get(String(e.outcome)) ?? 0) + 1);
    const during = writes.filter((e) => firstAfter !== undefined && e.at > lastBefore && e.at <= firstAfter);
    const duringStatus = new Map<string, number>();
    for (const e of during) duringStatus.set(String(e.outcome), (duringStatus.get(String(e.outcome)) ?? 0) + 1);

    const newPrimary = (await primaryNode(nodes))!;
    const report = await checkInvariants(`postgresql://postgres@127.0.0.1:${newPrimary.pgPort}/postgres`, workload.ledger);
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    const lines = [
      `failover: ${opts.clients} schedulers through HAProxy -> Patroni (2 nodes, synchronous_mode, ttl 10 s, loop_wait 1 s), ${old.name} killed after ${opts.beforeSeconds} s`,
      `  new primary ${newPrimary.name} (REST /primary) ${s(promotedAt - killedAt)} after the kill`,
      firstAfter === undefined
        ? "  no claim acknowledged after the kill"
        : `  outage window (longest stretch with no claim acknowledged): ${s(firstAfter - lastBefore)}, from ${s(lastBefore - killedAt)} to ${s(firstAfter - killedAt)} after the kill`,
      `  claim answers in the window: ${[...duringStatus].map(([k, v]) => `${k}: ${v}`).join(", ") || "none"}`,
      `  all answers: ${[...byStatus].sort().map(([k, v]) => `${k}: ${v}`).join(", ")}`,
      `  writes retried after a 503 or a lost connection: ${workload.ledger.retried} (${workload.ledger.retriedHadCommitted} of them had committed the first time)`,
      `  acknowledged consumers: ${workload.ledger.acknowledged.size}, outcome unknown: ${workload.ledger.uncertain.size}, checked in the tables: ${report.consumersChecked}`,
      `  over capacity: ${report.overCapacity.length}, usage drift: ${report.usageDrift.length}, empty consumers: ${report.emptyConsumers.length}, ledger mismatches (lost or duplicated claims): ${report.ledgerMismatches.length}`,
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
    if (broken(report)) {
      process.stdout.write(`${JSON.stringify(report.ledgerMismatches.slice(0, 5), null, 2)}\n`);
      process.exitCode = 1;
    }
  } catch (err) {
    for (const proc of procs) process.stderr.write(`--- ${proc.name}\n${proc.output().slice(-3000)}\n`);
    if (server) process.stderr.write(`--- server\n${server.output().slice(-3000)}\n`);
    throw err;
  } finally {
    await server?.stop();
    for (const proc of procs.reverse()) killGroup(proc, "SIGTERM");
    await sleep(2_000);
    for (const proc of procs) killGroup(proc, "SIGKILL");
    for (const n of nodes) {
      const pidFile = path.join(n.dataDir, "postmaster.pid");
      if (existsSync(pidFile)) {
        try {
          process.kill(Number(readFileSync(pidFile, "utf8").split("\n")[0]), "SIGKILL");
        } catch {
          // gone with its Patroni
        }
      }
    }
    await rm(dir, { recursive: true, force: true });
  }
}
