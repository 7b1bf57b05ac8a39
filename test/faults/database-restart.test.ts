/**
 * PostgreSQL stopped for a few seconds under load, then started again (its
 * own throwaway cluster: the shared one is never touched): while it is down
 * GET / still answers and everything else gets a quick 503; once it accepts
 * connections the server serves again within seconds, with no restart of
 * the server and nothing acknowledged lost.
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkInvariants } from "../../bench/faults/invariants.js";
import { Workload } from "../../bench/faults/workload.js";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "../../src/db/embedded.js";
import { createLogger } from "../../src/log.js";
import { freePort } from "../../src/net.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";

const log = createLogger("silent");
let dir: string;
let port: number;
let database: EmbeddedDatabase | undefined;
let server: ServerProcess | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "placement-restart-"));
  port = await freePort();
  database = await startEmbeddedPostgres(dir, port, log);
  server = await startServerProcess({ DATABASE_URL: database.url, PLACEMENT_WORKERS: "2", PLACEMENT_DB_POOL_SIZE: "4", LOG_LEVEL: "warn" }, 60_000);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await database?.stop();
  await rm(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Status of one request, or "dropped"/"hung" (10 s: far past any bound of the server). */
async function probe(url: string): Promise<number | string> {
  try {
    const res = await fetch(url, { headers: { "x-auth-token": "admin" }, signal: AbortSignal.timeout(10_000) });
    await res.arrayBuffer();
    return res.status;
  } catch (err) {
    return (err as Error).name === "TimeoutError" ? "hung" : "dropped";
  }
}

describe("PostgreSQL restarted under load", () => {
  it("answers 503 while it is down, serves again soon after it is back, and loses nothing", async () => {
    const base = server!.baseUrl;
    const work = new Workload({ baseUrls: [base], hangAfterMs: 20_000, retries: 40 });
    await work.createProviders(4);
    let loadDone!: () => void;
    const load = work.run(8, new Promise<void>((r) => (loadDone = r)));

    await sleep(1_500);
    await database!.stop();
    database = undefined;
    const whileDown = { root: await probe(`${base}/`), providers: await probe(`${base}/resource_providers`) };
    await sleep(2_000);
    database = await startEmbeddedPostgres(dir, port, log);
    const upAt = Date.now();
    let recoveredAfterMs = -1;
    while (Date.now() - upAt < 15_000) {
      if ((await probe(`${base}/resource_providers`)) === 200) {
        recoveredAfterMs = Date.now() - upAt;
        break;
      }
      await sleep(50);
    }
    await sleep(2_000); // load on the recovered server
    loadDone();
    await load;

    expect(whileDown).toEqual({ root: 200, providers: 503 });
    expect(recoveredAfterMs).toBeGreaterThanOrEqual(0);
    expect(recoveredAfterMs).toBeLessThan(5_000);
    const outcomes = Object.fromEntries(work.outcomes());
    for (const outcome of Object.keys(outcomes)) expect(["200", "204", "409", "503"], JSON.stringify(outcomes)).toContain(outcome);
    expect(outcomes["503"]).toBeGreaterThan(0);
    expect(server!.output()).not.toMatch(/worker exited/);
    expect(server!.child.exitCode).toBeNull();

    const report = await checkInvariants(database.url, work.ledger);
    expect(report).toMatchObject({ overCapacity: [], usageDrift: [], emptyConsumers: [], ledgerMismatches: [] });
    expect(report.consumersChecked).toBeGreaterThan(0);
  });
});
