/**
 * `npm run soak -- [--seconds 60] [--clients 12] [--workers 2] [--max-requests 1000000]`
 *
 * Runs schedulers and migrations against a real server for a while and
 * injects faults at random: backends terminated, PostgreSQL stopped and
 * started, a worker killed with SIGKILL, the database read-only, a row lock
 * held by a stuck session, a slowloris client. Then prints the count of
 * each answer, of the faults injected, and the invariant check from the
 * tables. Not a test: it asserts nothing about time; it exits 1 if an
 * invariant broke, a request hung or the server answered 500.
 *
 * Everything is its own and on loopback: a throwaway PostgreSQL cluster in a
 * temporary directory on a free port, the server on another free port.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../src/db/embedded.js";
import { createLogger } from "../src/log.js";
import { freePort } from "../src/net.js";
import { databaseName, holdRandomProviderLock, setReadOnly, slowClient, terminateBackends } from "./faults/inject.js";
import { broken, checkInvariants } from "./faults/invariants.js";
import { startSoakServer, type SoakServer } from "./faults/server.js";
import { Workload } from "./faults/workload.js";

const HEADERS_TIMEOUT_MS = 2_000;
const LOCK_TIMEOUT_MS = 1_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const between = (lo: number, hi: number) => lo + Math.random() * (hi - lo);

export default async function soak(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      seconds: { type: "string", default: "60" },
      clients: { type: "string", default: "12" },
      workers: { type: "string", default: "2" },
      "max-requests": { type: "string", default: "1000000" },
    },
  });
  const seconds = Number(values.seconds);
  const maxRequests = Number(values["max-requests"]);
  const log = createLogger("warn");
  const dir = await mkdtemp(path.join(os.tmpdir(), "placement-soak-"));
  const dbPort = await freePort();
  let database: EmbeddedDatabase | undefined = await startEmbeddedPostgres(dir, dbPort, log);
  const url = database.url;
  const dbName = databaseName(url);
  let server: SoakServer | undefined;
  try {
    server = await startSoakServer({
      DATABASE_URL: url,
      PLACEMENT_WORKERS: values.workers!,
      PLACEMENT_DB_POOL_SIZE: "6",
      LOG_LEVEL: "warn",
      PLACEMENT_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      PLACEMENT_DB_LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
    });
    const work = new Workload({ baseUrls: [server.baseUrl], hangAfterMs: 30_000, retries: 60 });
    await work.createProviders(8);
    process.stdout.write(`soak: ${seconds} s, ${values.clients} clients, ${values.workers} workers, server ${server.baseUrl}\n`);

    const started = Date.now();
    let finish!: () => void;
    const done = new Promise<void>((r) => (finish = r));
    const timer = setTimeout(finish, seconds * 1000);
    const capped = setInterval(() => {
      if ([...work.counts.values()].reduce((a, b) => a + b, 0) >= maxRequests) finish();
    }, 500);

    const faults = new Map<string, number>();
    const slowAnswers = new Map<string, number>();
    const current = server;
    const kinds: Record<string, () => Promise<void>> = {
      "terminate backends": async () => void (await terminateBackends(url, dbName)),
      "restart postgresql": async () => {
        await database!.stop();
        database = undefined;
        await sleep(between(1_000, 4_000));
        database = await startEmbeddedPostgres(dir, dbPort, log);
      },
      "kill -9 a worker": async () => {
        const workers = current.workers();
        if (workers.length > 0) process.kill(workers[Math.floor(Math.random() * workers.length)], "SIGKILL");
      },
      "read-only database": async () => {
        await setReadOnly(url, dbName, true);
        await sleep(between(1_000, 3_000));
        await setReadOnly(url, dbName, false);
      },
      "row lock held": () => holdRandomProviderLock(url, between(LOCK_TIMEOUT_MS / 2, LOCK_TIMEOUT_MS * 3)),
      "slow client": async () => {
        const line = await slowClient(current.baseUrl, HEADERS_TIMEOUT_MS * 5);
        slowAnswers.set(line, (slowAnswers.get(line) ?? 0) + 1);
      },
    };
    const injector = (async () => {
      let stop = false;
      void done.then(() => (stop = true));
      while (!stop) {
        await sleep(between(2_000, 6_000));
        if (stop) break;
        const names = Object.keys(kinds);
        const name = names[Math.floor(Math.random() * names.length)];
        faults.set(name, (faults.get(name) ?? 0) + 1);
        await kinds[name]().catch((err) => process.stdout.write(`fault ${name} failed to inject: ${err}\n`));
      }
    })();

    await Promise.all([work.run(Number(values.clients), done), injector]);
    clearTimeout(timer);
    clearInterval(capped);
    const ranSeconds = (Date.now() - started) / 1000;
    if (!database) database = await startEmbeddedPostgres(dir, dbPort, log);

    const report = await checkInvariants(url, work.ledger);
    const outcomes = work.outcomes();
    const total = [...outcomes.values()].reduce((a, b) => a + b, 0);
    const restarts = (server.output().match(/worker exited; starting another/g) ?? []).length;
    const out: string[] = [];
    out.push(`ran ${ranSeconds.toFixed(0)} s: ${total} requests (${(total / ranSeconds).toFixed(0)}/s)`);
    out.push(`answers: ${[...outcomes].sort().map(([k, n]) => `${k}: ${n}`).join(", ")}`);
    out.push("by request:");
    for (const [key, n] of [...work.counts].sort()) out.push(`  ${key}: ${n}`);
    out.push(`faults injected: ${[...faults].map(([k, n]) => `${k}: ${n}`).join(", ") || "none"}`);
    out.push(`slow clients answered: ${[...slowAnswers].map(([k, n]) => `${k || "(closed without answer)"}: ${n}`).join(", ") || "none"}`);
    out.push(`workers replaced: ${restarts}; server process still up: ${server.child.exitCode === null}`);
    out.push(
      `writes retried after 503/drop: ${work.ledger.retried} (had committed the first time: ${work.ledger.retriedHadCommitted}); unresolved at the end: ${work.ledger.uncertain.size}`,
    );
    out.push(
      `invariants over ${report.consumersChecked} consumers: over capacity ${report.overCapacity.length}, usage drift ${report.usageDrift.length}, ` +
        `empty consumers ${report.emptyConsumers.length}, ledger mismatches ${report.ledgerMismatches.length}`,
    );
    for (const m of report.ledgerMismatches.slice(0, 5)) out.push(`  mismatch ${JSON.stringify(m)}`);
    const failed = broken(report) || (outcomes.get("hung") ?? 0) > 0 || (outcomes.get("500") ?? 0) > 0 || server.child.exitCode !== null;
    out.push(failed ? "RESULT: FAILED" : "RESULT: ok");
    process.stdout.write(`${out.join("\n")}\n`);
    if (failed) process.exitCode = 1;
  } finally {
    await server?.stop();
    await database?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
