/**
 * GET /allocation_candidates on a real streaming standby (PLACEMENT_READ_DATABASE_URL):
 * a primary made by initdb and a hot standby made by pg_basebackup -R, on free
 * ports (so suites running at once on one machine do not meet). Shows that candidates are read there (a paused
 * standby answers without a provider the primary has, and the standby's
 * pg_stat_activity shows the statement), that a standby further behind than
 * PLACEMENT_READ_MAX_LAG_SECONDS is skipped for the primary and used again
 * once caught up, that a claim of a stale candidate is refused with nothing
 * overcommitted in the tables, and that a standby which stops or was never
 * there leaves every read answered by the primary.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/net.js";
import { createApp } from "../../src/app.js";
import { testConfig } from "../../src/config.js";
import { NO_LIMITS, openDatabase, type Database } from "../../src/db/database.js";
import { runMigrations } from "../../src/db/migrate.js";
import { ReadReplicas } from "../../src/db/read-replicas.js";
import { Microversion } from "../../src/http/microversion.js";
import { createLogger } from "../../src/log.js";
import { createMetrics, type Metrics } from "../../src/observe/metrics.js";
import { queryPairs } from "../../src/query/query-string.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";
import { fastBody } from "../support/bodies.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import { generalPath } from "../../src/services/candidates/paths/general.js";
import { CandidatesService, type CandidatesSink } from "../../src/services/candidates/service.js";
import { ReplicaRoutedCandidates } from "../../src/services/replica-candidates.js";
import { runPlacement } from "../support/cli-process.js";
import { clusterToolsMissing, postgresBin, startPrimary, startStandby, waitForReplay, type Cluster } from "../support/clusters.js";

const missing = clusterToolsMissing();
/** Nothing listens here: a standby that was never there. */
let nobodyPort: number;
/** The standby's reads carry this name, so its pg_stat_activity shows which sessions are the server's. */
const READS_APP = "placement_replica_reads";

const log = createLogger("silent");
let primary: Cluster;
let standby: Cluster;
let database: Database;
/** What each test opened: apps (whose close() closes their replicas) and replicas opened alone. */
const opened: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  if (missing) return;
  nobodyPort = await freePort();
  primary = await startPrimary({ port: await freePort() });
  const migrating = openDatabase(primary.url, 1, log);
  await runMigrations(migrating.pool);
  await migrating.close();
  standby = await startStandby(primary, { port: await freePort() });
  await waitForReplay(primary, standby);
  database = openDatabase(primary.url, 5, log);
}, 180_000);

afterAll(async () => {
  if (missing) return;
  for (const r of opened) await r.close();
  await database?.close();
  await standby?.stop();
  await primary?.stop();
});

/** An app over the primary whose configuration names `replicaUrls` as its standbys (createApp opens them). */
async function serverWith(replicaUrls: string[], maxLagSeconds: number) {
  const metrics = createMetrics();
  const config = testConfig({
    DATABASE_URL: primary.url,
    PLACEMENT_READ_DATABASE_URL: replicaUrls,
    PLACEMENT_READ_MAX_LAG_SECONDS: maxLagSeconds,
    PLACEMENT_DB_POOL_SIZE: 3,
  });
  const placement = await createApp({ db: database.db, config, log, metrics });
  opened.push(placement);
  const { app } = placement;
  const reads = placement.services.replicas!;
  const request = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, {
      method,
      headers: { "x-auth-token": "admin", "openstack-api-version": "placement latest", accept: "application/json", "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
  };
  return { reads, metrics, request, close: () => placement.close() };
}

type Server = Awaited<ReturnType<typeof serverWith>>;

const standbyUrl = (name = READS_APP) => `${standby.url}?application_name=${name}`;

async function provider(server: Server, vcpus: number): Promise<string> {
  const uuid = randomUUID();
  expect((await server.request("POST", "/resource_providers", { uuid, name: `replicas-${uuid}` })).status).toBe(200);
  const put = await server.request("PUT", `/resource_providers/${uuid}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: vcpus } } });
  expect(put.status).toBe(200);
  return uuid;
}

/** The providers GET /allocation_candidates offers for `vcpus` VCPU (every one of this file's providers takes part). */
async function candidates(server: Server, vcpus: number): Promise<{ uuids: string[]; body: any }> {
  const res = await server.request("GET", `/allocation_candidates?resources=VCPU:${vcpus}`);
  expect(res.status, res.text).toBe(200);
  return { uuids: Object.keys(res.body.provider_summaries), body: res.body };
}

async function servedBy(metrics: Metrics): Promise<Record<string, number>> {
  const metric = await metrics.registry.getSingleMetric("placement_db_replica_reads_total")!.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.served_by), v.value]));
}

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const pause = () => standby.query("SELECT pg_wal_replay_pause()");
const resume = () => standby.query("SELECT pg_wal_replay_resume()");

describe.skipIf(missing !== undefined)(`read replicas on a real streaming standby${missing ? ` (skipped: ${missing})` : ""}`, () => {
  it("serves candidates from the standby: a paused one answers without what only the primary has, and its sessions ran the statement", async () => {
    const server = await serverWith([standbyUrl()], 60);
    const first = await provider(server, 4);
    await waitForReplay(primary, standby);
    expect((await candidates(server, 1)).uuids).toContain(first);
    // pg_stat_activity keeps the first kilobyte of a statement: the candidates statement starts with its name lookups.
    const [{ ran }] = await standby.query<{ ran: number }>(
      "SELECT count(*)::int AS ran FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE '%FROM resource_classes%'",
      [READS_APP],
    );
    expect(ran).toBeGreaterThan(0);

    await pause();
    try {
      const second = await provider(server, 4);
      const stale = await candidates(server, 1);
      expect(stale.uuids).toContain(first);
      expect(stale.uuids).not.toContain(second);
      // Well inside the bound of 60 s, the paused standby still serves.
      await until("a check sees the pause", () => server.reads.states()[0].replayPaused);
      expect(server.reads.states()[0]).toMatchObject({ usable: true, detail: "replay paused" });
    } finally {
      await resume();
    }
    expect(await servedBy(server.metrics)).toMatchObject({ replica: 2 });
  });

  it("answers a cloud with trees there too, in the engine's read-only snapshot", async () => {
    const server = await serverWith([standbyUrl()], 60);
    const root = randomUUID();
    expect((await server.request("POST", "/resource_providers", { uuid: root, name: `replicas-root-${root}` })).status).toBe(200);
    const child = async () => {
      const uuid = randomUUID();
      const made = await server.request("POST", "/resource_providers", { uuid, name: `replicas-child-${uuid}`, parent_provider_uuid: root });
      expect(made.status, made.text).toBe(200);
      const put = await server.request("PUT", `/resource_providers/${uuid}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 2 } } });
      expect(put.status, put.text).toBe(200);
      return uuid;
    };
    const first = await child();
    await waitForReplay(primary, standby);
    await pause();
    try {
      const second = await child();
      const stale = await candidates(server, 2);
      expect(stale.uuids).toEqual(expect.arrayContaining([root, first]));
      expect(stale.uuids).not.toContain(second);
    } finally {
      await resume();
    }
    expect(await servedBy(server.metrics)).toEqual({ replica: 1 });
  });

  it("skips a standby further behind than the bound for the primary, and uses it again once caught up", async () => {
    const server = await serverWith([standbyUrl()], 1);
    await waitForReplay(primary, standby);
    await until("the standby serves", () => server.reads.states()[0].usable);
    await pause();
    let written: string;
    try {
      written = await provider(server, 4);
      await until("the standby is skipped", () => !server.reads.states()[0].usable);
      await until("a check measures it more than 1 s behind", () => (server.reads.states()[0].behindSeconds ?? 0) > 1);
      // The primary answers: the provider the standby has not replayed is there.
      expect((await candidates(server, 1)).uuids).toContain(written);
      expect(await servedBy(server.metrics)).toEqual({ primary: 1 });
      const scrape = await server.metrics.registry.metrics();
      expect(scrape).toContain(`placement_db_replica_usable{replica="127.0.0.1:${standby.port}/postgres"} 0`);
      const lag = Number(new RegExp(`placement_db_replica_lag_seconds\\{replica="127\\.0\\.0\\.1:${standby.port}/postgres"\\} (\\S+)`).exec(scrape)?.[1]);
      expect(lag).toBeGreaterThan(1);
    } finally {
      await resume();
    }
    await until("the standby serves again", () => server.reads.states()[0].usable);
    expect((await candidates(server, 1)).uuids).toContain(written);
    expect(await servedBy(server.metrics)).toEqual({ primary: 1, replica: 1 });
  });

  it("refuses the claim of a stale candidate read from a lagging standby with 409, nothing overcommitted", async () => {
    const server = await serverWith([standbyUrl()], 60);
    const target = await provider(server, 4);
    await waitForReplay(primary, standby);
    await pause();
    try {
      const taken = await server.request("PUT", `/allocations/${randomUUID()}`, {
        allocations: { [target]: { resources: { VCPU: 4 } } },
        project_id: randomUUID(),
        user_id: randomUUID(),
        consumer_generation: null,
        consumer_type: "INSTANCE",
      });
      expect(taken.status, taken.text).toBe(204);
      // The standby has not replayed the claim: it offers the provider's 4 VCPU as free.
      const stale = await candidates(server, 4);
      const offer = stale.body.allocation_requests.find((r: any) => Object.keys(r.allocations).includes(target));
      expect(offer).toBeDefined();
      expect(await servedBy(server.metrics)).toEqual({ replica: 1 });

      const claim = await server.request("PUT", `/allocations/${randomUUID()}`, {
        allocations: offer.allocations,
        project_id: randomUUID(),
        user_id: randomUUID(),
        consumer_generation: null,
        consumer_type: "INSTANCE",
      });
      expect(claim.status, claim.text).toBe(409);
      expect(claim.body.errors[0].detail).toMatch(/capacity/i);
    } finally {
      await resume();
    }
    const [usage] = await primary.query<{ used: number; total: number; consumers: number }>(
      `SELECT coalesce(sum(a.used), 0)::int AS used, i.total, count(a.*)::int AS consumers
       FROM resource_providers rp JOIN inventories i ON i.resource_provider_id = rp.id
       LEFT JOIN allocations a ON a.resource_provider_id = rp.id AND a.resource_class_id = i.resource_class_id
       WHERE rp.uuid = $1 GROUP BY i.total`,
      [target],
    );
    expect(usage).toEqual({ used: 4, total: 4, consumers: 1 });
  });

  it("answers every read from the primary when a standby was never there, in turn with one that is", async () => {
    const nobody = `postgresql://postgres@127.0.0.1:${nobodyPort}/postgres`;
    const server = await serverWith([nobody, standbyUrl("placement_replica_second")], 60);
    const fresh = await provider(server, 4);
    await waitForReplay(primary, standby);
    const [down, up] = server.reads.states();
    expect(down).toMatchObject({ usable: false, detail: expect.stringMatching(/^unreachable: .*ECONNREFUSED|connect/) });
    expect(up.usable).toBe(true);
    for (let i = 0; i < 4; i++) expect((await candidates(server, 1)).uuids).toContain(fresh);
    expect(await servedBy(server.metrics)).toEqual({ replica: 4 });
  });

  it("skips a server that is not a standby, and a standby of another primary", async () => {
    const options = { maxLagSeconds: 60, poolSize: 1, limits: NO_LIMITS, log };
    const notStandby = await ReadReplicas.open(database.db, { ...options, primaryUrl: primary.url, replicaUrls: [primary.url] }, false);
    opened.push(notStandby);
    expect(notStandby.states()[0]).toMatchObject({ usable: false, detail: "not a standby (not in recovery)" });
    // The machine's own PostgreSQL as "the primary": the standby's positions belong to another system.
    const otherPrimary = "postgresql://postgres@127.0.0.1:5432/postgres";
    const foreign = await ReadReplicas.open(database.db, { ...options, primaryUrl: otherPrimary, replicaUrls: [standbyUrl()] }, false);
    opened.push(foreign);
    expect(foreign.states()[0]).toMatchObject({ usable: false, detail: expect.stringMatching(/^not a standby of this primary \(system identifier \d+, the primary's \d+\)$/) });
    expect(foreign.pick().replica).toBeUndefined();
  });

  it("placement status measures each standby and warns of one the server would skip", async () => {
    const nobody = `postgresql://postgres@127.0.0.1:${nobodyPort}/postgres`;
    await waitForReplay(primary, standby);
    const run = await runPlacement(["status", "--json"], { DATABASE_URL: primary.url, PLACEMENT_READ_DATABASE_URL: `${standby.url},${nobody}` });
    const { checks } = JSON.parse(run.stdout) as { checks: Array<{ name: string; result: string; details: string }> };
    expect(run.code, run.stderr).toBe(1);
    const check = checks.find((c) => c.name === "Read replicas");
    expect(check?.result).toBe("Warning");
    expect(check?.details).toMatch(
      new RegExp(`^127\\.0\\.0\\.1:${standby.port}/postgres serves reads \\(streaming, \\d+\\.\\d s behind\\); 127\\.0\\.0\\.1:${nobodyPort}/postgres skipped \\(unreachable: `),
    );
    expect(check?.details).toMatch(/reads it would serve go to the primary \(bound: 5 s\)$/);
  });

  it("runs a read again on the primary when the standby fails it after the engine wrote candidates, and answers it once", async () => {
    const app = "placement_replica_cut";
    const server = await serverWith([standbyUrl(app)], 60);
    const root = randomUUID();
    expect((await server.request("POST", "/resource_providers", { uuid: root, name: `replicas-cut-${root}` })).status).toBe(200);
    const put = await server.request("PUT", `/resource_providers/${root}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } });
    expect(put.status, put.text).toBe(200);
    // A tree, and the general plan over the database forced, so that the standby is still read while
    // candidates are written (the flat view writes its answer whole, at its end; the tree view reads
    // the standby once, before its first candidate).
    const child = randomUUID();
    expect((await server.request("POST", "/resource_providers", { uuid: child, name: `replicas-cut-${child}`, parent_provider_uuid: root })).status).toBe(200);
    await waitForReplay(primary, standby);
    await until("the standby serves", () => server.reads.states()[0].usable);

    const mv = Microversion.from("1.39");
    const query = parseCandidatesQuery(queryPairs("http://placement/allocation_candidates?resources=VCPU:1"), mv);
    const config = testConfig({ DATABASE_URL: primary.url });
    const overDatabase = { paths: [generalPath] };
    const routed = new ReplicaRoutedCandidates(new CandidatesService(database.db, config, overDatabase), server.reads, (db) => new CandidatesService(db, config, overDatabase));
    const body = fastBody(answerShape(mv), query);
    let calls = 0;
    let terminated = 0;
    // The standby's sessions end under the engine as its first candidate is written: what was written
    // must not reach the answer, and the read must not fail for it.
    const cutting: CandidatesSink = {
      candidate: (candidate, names) => {
        if (calls++ === 0) {
          const sql = `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '${app}'`;
          terminated = Number(execFileSync(path.join(postgresBin()!, "psql"), ["-h", "127.0.0.1", "-p", String(standby.port), "-U", "postgres", "-Atc", sql]).toString().trim());
        }
        body.candidate(candidate, names);
      },
      end: (result) => body.end(result),
      flat: (answer) => body.flat(answer),
      discard: () => body.discard(),
    };
    const out = await body.respond(routed.answer(query, answerShape(mv), cutting), () => undefined);
    expect(terminated).toBeGreaterThan(0);
    expect(calls).toBeGreaterThan(body.written);

    const onlyPrimary = await createApp({ db: database.db, config, log, metrics: createMetrics() });
    opened.push(onlyPrimary);
    const direct = await onlyPrimary.app.request("/allocation_candidates?resources=VCPU:1", {
      headers: { "x-auth-token": "admin", "openstack-api-version": "placement 1.39", accept: "application/json" },
    });
    expect(JSON.parse((out as Buffer).toString())).toEqual(await direct.json());
    expect(await servedBy(server.metrics)).toEqual({ primary: 1 });
  });

  it("leaves no connection to the standby open once the app is closed", async () => {
    const app = "placement_replica_close";
    const server = await serverWith([standbyUrl(app)], 60);
    await waitForReplay(primary, standby);
    await until("the standby serves", () => server.reads.states()[0].usable);
    await candidates(server, 1);
    const sessions = async () =>
      (await standby.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1", [app]))[0].n;
    expect(await sessions()).toBeGreaterThan(0);
    await server.close();
    await until("the standby's sessions end", async () => (await sessions()) === 0, 5_000);
    expect(await servedBy(server.metrics)).toEqual({ replica: 1 });
  });

  // Last: it stops the standby.
  it("serves every read from the primary, never a 500, once the standby stops", async () => {
    const server = await serverWith([standbyUrl()], 60);
    const fresh = await provider(server, 4);
    await waitForReplay(primary, standby);
    expect((await candidates(server, 1)).uuids).toContain(fresh);
    const stopping = standby.stop("immediate");
    const answers: number[] = [];
    // Reads race the stop and the checks that notice it: each is answered, by whichever server can.
    while (server.reads.states()[0].usable || answers.length < 20) {
      const batch = await Promise.all(
        Array.from({ length: 4 }, () => server.request("GET", "/allocation_candidates?resources=VCPU:1")),
      );
      for (const r of batch) {
        answers.push(r.status);
        expect(r.status, r.text).toBe(200);
        expect(Object.keys(r.body.provider_summaries)).toContain(fresh);
      }
    }
    await stopping;
    expect(server.reads.states()[0]).toMatchObject({ usable: false, detail: expect.stringMatching(/^unreachable/) });
    for (let i = 0; i < 5; i++) expect((await candidates(server, 1)).uuids).toContain(fresh);
    expect((await servedBy(server.metrics)).primary).toBeGreaterThanOrEqual(5);
  });
});
