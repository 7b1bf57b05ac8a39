/**
 * Concurrent claimers filling a cloud through POST /claims, in one process
 * (one pool, real connections) and across two server processes on one
 * database (requests alternating between them), with the invariants read
 * from the tables afterwards. The second needs dist/ (global setup builds it).
 *
 * "No 409 while a fitting candidate existed": the clouds here only fill, and
 * every claim fits any free slot, so until the last successful claim
 * committed there was room for one more. A 409 answered before that last
 * claim was even sent was therefore given while a candidate fitted; none may be.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { startServerProcess, type ServerProcess } from "../support/server-process.js";
import { createProvider, PROJECT, USER, type Provider } from "../allocations/fixtures.js";
import { allocationsOf, brokenInvariants, claimBody, consumer, emptyCloud } from "./support.js";

const CLIENTS = 16;

interface Reply {
  status: number;
  body: any;
  sent: number;
  received: number;
}
type Send = (method: string, path: string, body?: unknown) => Promise<Reply>;

let t: Harness;
let servers: ServerProcess[] = [];
const transports: Record<string, Send> = {};
/** Each transport's deadlocks so far, as its servers' metrics count them (every retry after PostgreSQL's 40P01). */
const deadlocks: Record<string, () => Promise<number>> = {};

const DEADLOCK_RETRIES = /^placement_db_transaction_retries_total\{cause="deadlock"\} ([0-9]+)$/m;
const deadlocksIn = (exposition: string) => Number(DEADLOCK_RETRIES.exec(exposition)?.[1] ?? 0);

beforeAll(async () => {
  t = await startHarness({ poolSize: CLIENTS + 4 });
  transports["one process"] = async (method, path, body) => {
    const sent = performance.now();
    const res = await t.request(method, path, { body, version: "1.39" });
    return { status: res.status, body: res.body, sent, received: performance.now() };
  };
  deadlocks["one process"] = async () => deadlocksIn(await t.metrics.registry.metrics());
  const env = { DATABASE_URL: t.url, LOG_LEVEL: "warn", PLACEMENT_DB_POOL_SIZE: String(CLIENTS / 2 + 2), PLACEMENT_METRICS_ON_API_PORT: "true" };
  servers = await Promise.all([startServerProcess(env, 60_000), startServerProcess(env, 60_000)]);
  let next = 0;
  transports["two processes"] = async (method, path, body) => {
    const server = servers[next++ % servers.length];
    const sent = performance.now();
    const res = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { "x-auth-token": "admin", accept: "application/json", "openstack-api-version": "placement 1.39", "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, sent, received: performance.now() };
  };
  deadlocks["two processes"] = async () => {
    const counts = await Promise.all(
      servers.map(async (server) => deadlocksIn(await (await fetch(`${server.baseUrl}/metrics`, { headers: { "x-auth-token": "admin" } })).text())),
    );
    return counts.reduce((a, b) => a + b, 0);
  };
}, 120_000);

afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await t?.close();
});


/** K claimers, each claiming until it is told nothing fits; every reply kept. */
async function fill(send: Send, query: string, body: () => object): Promise<Reply[]> {
  const replies: Reply[] = [];
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (;;) {
        const reply = await send("POST", `/claims?${query}`, body());
        replies.push(reply);
        if (reply.status !== 200) return;
      }
    }),
  );
  return replies;
}

function noEarly409(replies: Reply[]) {
  const ok = replies.filter((r) => r.status === 200);
  const lastSent = Math.max(...ok.map((r) => r.sent));
  const early = replies.filter((r) => r.status === 409 && r.received < lastSent);
  expect(early.map((r) => r.body?.errors?.[0]?.detail)).toEqual([]);
}

describe.each(["one process", "two processes"])("claim races (%s)", (mode) => {
  const send: Send = (...args) => transports[mode](...args);

  it.each(["pack", "spread", "random"])("%s: claimers fill a cloud exactly, with no 409 while room was left and no deadlock", async (pick) => {
    await emptyCloud(t);
    const nodes: Provider[] = [];
    for (let i = 0; i < 10; i++) nodes.push(await createProvider(t, { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } }));
    const deadlocksBefore = await deadlocks[mode]();
    const replies = await fill(send, "resources=VCPU:1,MEMORY_MB:1024&limit=20", () => claimBody({ pick }));
    // Claims alone take their locks in one order (claims.ts, claims-statement.ts): a deadlock would only be retried, unseen in the answers.
    expect((await deadlocks[mode]()) - deadlocksBefore).toBe(0);

    expect(replies.filter((r) => r.status !== 200 && r.status !== 409).map((r) => r.body)).toEqual([]);
    const ok = replies.filter((r) => r.status === 200);
    expect(ok).toHaveLength(40);
    expect(replies.filter((r) => r.status === 409)).toHaveLength(CLIENTS);
    for (const r of replies.filter((r) => r.status === 409)) expect(r.body.errors[0].detail).toContain("Unable to claim");
    noEarly409(replies);
    // Every answer is what the tables hold, and the cloud is exactly full.
    for (const r of ok) {
      const [claim] = r.body.claims;
      const answered = Object.fromEntries(Object.entries(claim.allocations).map(([rp, a]: [string, any]) => [rp, a.resources]));
      expect(await allocationsOf(t, claim.consumer_uuid)).toEqual(answered);
    }
    const free = await t.sql<{ free: number }>("SELECT sum(free)::int AS free FROM provider_capacity");
    expect(free).toEqual([{ free: 0 }]);
    expect(await t.sql("SELECT count(*)::int AS n FROM consumers")).toEqual([{ n: 40 }]);
    expect(await brokenInvariants(t)).toEqual([]);
    // Every claim bumped its provider once: generations count the claims.
    const gens = await t.sql<{ g: number }>("SELECT sum(generation)::int AS g FROM resource_providers");
    expect(gens).toEqual([{ g: 40 }]);
  });

  it("all-or-nothing claims of three consumers leave nothing behind when they fail", async () => {
    await emptyCloud(t);
    // 3 x 6 + 2 + 1 = 21 slots: seven claims of three fit, then none does.
    for (let i = 0; i < 3; i++) await createProvider(t, { VCPU: { total: 6 } });
    await createProvider(t, { VCPU: { total: 2 } });
    await createProvider(t, { VCPU: { total: 1 } });
    const replies = await fill(send, "resources=VCPU:1", () => claimBody({ pick: "spread" }, [consumer(), consumer(), consumer()]));
    const ok = replies.filter((r) => r.status === 200);
    expect(replies.filter((r) => r.status !== 200 && r.status !== 409).map((r) => r.body)).toEqual([]);
    expect(ok).toHaveLength(7);
    for (const r of ok) expect(r.body.claims).toHaveLength(3);
    expect(await t.sql("SELECT count(*)::int AS n FROM consumers")).toEqual([{ n: 21 }]);
    expect(await t.sql("SELECT sum(free)::int AS free FROM provider_capacity")).toEqual([{ free: 0 }]);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("as many as fit: claims of four instances fill a cloud exactly, every acknowledged instance written", async () => {
    await emptyCloud(t);
    // 5 x 3 = 15 slots: not a multiple of four, so the last claims are partial.
    for (let i = 0; i < 5; i++) await createProvider(t, { VCPU: { total: 3 }, MEMORY_MB: { total: 3072 } });
    const replies = await fill(send, "resources=VCPU:1,MEMORY_MB:1024", () =>
      claimBody({ pick: "pack", all_or_nothing: false }, [consumer(), consumer(), consumer(), consumer()]),
    );
    expect(replies.filter((r) => r.status !== 200 && r.status !== 409).map((r) => r.body)).toEqual([]);
    noEarly409(replies);
    const ok = replies.filter((r) => r.status === 200);
    const claimed = ok.flatMap((r) => r.body.claims);
    expect(claimed).toHaveLength(15);
    for (const r of ok) expect(r.body.claims.length + r.body.unplaced.length).toBe(4);
    for (const c of claimed) {
      const answered = Object.fromEntries(Object.entries(c.allocations).map(([rp, a]: [string, any]) => [rp, a.resources]));
      expect(await allocationsOf(t, c.consumer_uuid)).toEqual(answered);
    }
    // The unplaced consumers were not left behind.
    const unplaced = ok.flatMap((r) => r.body.unplaced as string[]);
    expect(await t.sql("SELECT uuid FROM consumers WHERE uuid = ANY($1)", [unplaced])).toEqual([]);
    expect(await t.sql("SELECT count(*)::int AS n FROM consumers")).toEqual([{ n: 15 }]);
    expect(await t.sql("SELECT sum(free)::int AS free FROM provider_capacity WHERE resource_class = 'VCPU'")).toEqual([{ free: 0 }]);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("one-instance claims (one statement), two-instance claims (a transaction) and ordinary writes fill a cloud exactly together", async () => {
    await emptyCloud(t);
    const nodes: Provider[] = [];
    for (let i = 0; i < 4; i++) nodes.push(await createProvider(t, { VCPU: { total: 30 }, MEMORY_MB: { total: 30720 } }));
    const writes = Array.from({ length: 16 }, (_, i) => {
      const [a, b] = i % 2 ? [nodes[1], nodes[2]] : [nodes[2], nodes[1]];
      return send("PUT", `/allocations/${newUuid()}`, {
        allocations: { [a.uuid]: { resources: { VCPU: 1, MEMORY_MB: 1024 } }, [b.uuid]: { resources: { VCPU: 1, MEMORY_MB: 1024 } } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: null,
        consumer_type: "INSTANCE",
      });
    });
    let n = 0;
    // As many as fit, so the two-instance claims take the last single slot too and the cloud ends exactly full.
    const claims = fill(send, "resources=VCPU:1,MEMORY_MB:1024", () =>
      n++ % 2 ? claimBody({ pick: "pack" }) : claimBody({ pick: "pack", all_or_nothing: false }, [consumer(), consumer()]),
    );
    const written = await Promise.all(writes);
    const claimed = await claims;
    expect([...written, ...claimed].filter((r) => r.status !== 200 && r.status !== 204 && r.status !== 409).map((r) => r.body)).toEqual([]);
    noEarly409(claimed);
    const instances = claimed.filter((r) => r.status === 200).flatMap((r) => r.body.claims);
    expect(2 * written.filter((r) => r.status === 204).length + instances.length).toBe(120);
    for (const c of instances) {
      const answered = Object.fromEntries(Object.entries(c.allocations).map(([rp, a]: [string, any]) => [rp, a.resources]));
      expect(await allocationsOf(t, c.consumer_uuid)).toEqual(answered);
    }
    expect(await t.sql("SELECT sum(free)::int AS free FROM provider_capacity")).toEqual([{ free: 0 }]);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("claims racing ordinary writes that span two providers neither deadlock nor overcommit", async () => {
    await emptyCloud(t);
    const nodes: Provider[] = [];
    for (let i = 0; i < 4; i++) nodes.push(await createProvider(t, { VCPU: { total: 40 } }));
    const writes = Array.from({ length: 24 }, (_, i) => {
      const [a, b] = i % 2 ? [nodes[0], nodes[3]] : [nodes[3], nodes[0]];
      return send("PUT", `/allocations/${newUuid()}`, {
        allocations: { [a.uuid]: { resources: { VCPU: 1 } }, [b.uuid]: { resources: { VCPU: 1 } } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: null,
        consumer_type: "INSTANCE",
      });
    });
    const claims = fill(send, "resources=VCPU:1", () => claimBody({ pick: "pack" }, [consumer(), consumer()]));
    const written = await Promise.all(writes);
    const claimed = await claims;
    // A write that found the room taken is a real 409; nothing else but success may come back.
    expect([...written, ...claimed].filter((r) => r.status !== 200 && r.status !== 204 && r.status !== 409).map((r) => r.body)).toEqual([]);
    const okWrites = written.filter((r) => r.status === 204).length;
    const okClaims = claimed.filter((r) => r.status === 200).length;
    expect(2 * okWrites + 2 * okClaims).toBe(160);
    expect(await t.sql("SELECT sum(free)::int AS free FROM provider_capacity")).toEqual([{ free: 0 }]);
    expect(await brokenInvariants(t)).toEqual([]);
  });
});
