/**
 * The one-statement write of POST /claims (services/claims-statement.ts)
 * against a writer that commits between the statement's snapshot and its
 * locks, made deterministic by a transaction of the test's own: it adds
 * usage to the host (the usage trigger locks and updates the host's
 * inventory row) and commits only once the claim's statement is waiting for
 * that row. The statement's snapshot still shows the room; only the locked
 * row's newest version shows it gone. A statement that checked capacity
 * against its snapshot would overcommit the host here. Last, the
 * transaction's first-free lock (services/claims.ts) against a writer that
 * fills the host between the answer and the transaction.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { createProvider, type Provider } from "../allocations/fixtures.js";
import { Microversion } from "../../src/http/microversion.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import { CandidatesService } from "../../src/services/candidates/service.js";
import { claim } from "../../src/services/claims.js";
import { allocationsOf, brokenInvariants, claimBody, consumer, emptyCloud, harnessWithOwnConnection } from "./support.js";

const db = harnessWithOwnConnection();

let host: Provider;
beforeEach(async () => {
  await emptyCloud(db.t);
  host = await createProvider(db.t, { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } });
});

const post = (resources: string, who = consumer()) => db.t.request("POST", `/claims?resources=${resources}`, { body: claimBody({ pick: "first" }, [who]), version: "1.39" });

/** Waits until the claim statement (named pl_claim on its connection) waits for a row lock; fails after `ms`. */
async function statementWaitsForLock(ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const rows = await db.t.sql(
      "SELECT 1 FROM pg_stat_activity WHERE query LIKE '/*named:pl_claim*/%' AND wait_event_type = 'Lock' AND datname = current_database()",
    );
    if (rows.length > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the claim statement never waited for the inventory row");
}

/** Another writer's allocation of `used` VCPU on the host, left uncommitted: its trigger holds the host's VCPU inventory row. */
async function addUsageUncommitted(used: number): Promise<void> {
  await db.own.query("BEGIN");
  const [c] = (
    await db.own.query<{ id: number }>(
      `INSERT INTO consumers (uuid, project_id, user_id, generation) SELECT gen_random_uuid()::text, p.id, u.id, 1
       FROM projects p, users u LIMIT 1 RETURNING id`,
    )
  ).rows;
  await db.own.query(
    "INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used) SELECT $1, $2, id, $3 FROM resource_classes WHERE name = 'VCPU'",
    [c.id, host.id, used],
  );
}

/** POST /claims of `resources` while another writer adds `used` VCPU to the host, committed once the claim's statement waits for its row. */
async function claimUnderWriter(used: number, resources: string, who = consumer()) {
  await addUsageUncommitted(used);
  const claim = post(resources, who);
  try {
    await statementWaitsForLock();
  } finally {
    await db.own.query("COMMIT");
  }
  return claim;
}

describe("POST /claims' one statement and a writer that commits under it", () => {
  it("checks the room on the inventory rows it locked, in their newest version: the host filled meanwhile is refused, not overcommitted", async () => {
    // A first claim makes the project and user known (the statement only joins them) and leaves 3 VCPU.
    expect((await post("VCPU:1")).status).toBe(200);
    const who = consumer();
    const res = await claimUnderWriter(3, "VCPU:1,MEMORY_MB:512", who);
    expect(res.status).toBe(409);
    expect(await db.t.sql("SELECT used FROM inventories WHERE resource_provider_id = $1 ORDER BY id", [host.id])).toEqual([{ used: 4 }, { used: 0 }]);
    expect(await db.t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [who.consumer_uuid])).toEqual([]);
    expect(await brokenInvariants(db.t)).toEqual([]);
  });

  it("takes the room that is left after the writer committed", async () => {
    expect((await post("VCPU:1")).status).toBe(200);
    const res = await claimUnderWriter(2, "VCPU:1");
    expect(res.status).toBe(200);
    // Generation 1 after the first claim, 2 after this one: the answer shows what was written.
    expect(res.body.claims[0].allocations[host.uuid]).toEqual({ generation: 2, resources: { VCPU: 1 } });
    expect(res.body.claims[0].consumer_generation).toBe(1);
    expect(await db.t.sql("SELECT generation FROM resource_providers WHERE id = $1", [host.id])).toEqual([{ generation: 2 }]);
    expect(await db.t.sql("SELECT used FROM inventories WHERE resource_provider_id = $1 ORDER BY id", [host.id])).toEqual([{ used: 4 }, { used: 0 }]);
    expect(await brokenInvariants(db.t)).toEqual([]);
  });
});

describe("the pool's connections", () => {
  it("are kept when the statement writes nothing: its own refusal does not close the connection it ran on", async () => {
    const who = consumer();
    expect((await post("VCPU:1", who)).status).toBe(200);
    // The statement fails on purpose when it writes nothing: here the consumer exists, and the transaction then words the 409.
    const removed: unknown[] = [];
    const onRemove = (client: unknown) => removed.push(client);
    const pool = db.t.database.pool;
    pool.on("remove", onRemove);
    try {
      for (let i = 0; i < 3; i++) expect((await post("VCPU:1", who)).status).toBe(409);
    } finally {
      pool.off("remove", onRemove);
    }
    expect(removed).toEqual([]);
    expect(await brokenInvariants(db.t)).toEqual([]);
  });
});

describe("the statement against its oracle, the transaction", () => {
  const parse = (q: string) => parseCandidatesQuery([...new URLSearchParams(q).entries()], Microversion.from("1.39"));

  it("chooses and answers alike for every pick that does not draw at random, and writes the same rows", async () => {
    const nodes: Provider[] = [host];
    for (let i = 0; i < 5; i++) nodes.push(await createProvider(db.t, { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } }));
    // Different fill levels, so pack and spread have an order to follow.
    expect((await post("VCPU:2,MEMORY_MB:512")).status).toBe(200);
    const service = new CandidatesService(db.t.database.db, db.t.config);
    // Which way each claim wrote: the statement on a connection checked out of the handle's pool, the transaction through transaction().
    const used: string[] = [];
    const handle = new Proxy(db.t.database.db, {
      get(target, prop, receiver) {
        if (prop === "$client") used.push("statement");
        if (prop === "transaction") used.push(prop);
        return Reflect.get(target, prop, receiver);
      },
    });
    const store = { db: handle, allocationRetries: 10 };
    const query = parse("resources=VCPU:1,MEMORY_MB:256");
    for (const pick of ["pack", "spread", "first"] as const) {
      const outcomes = [];
      for (const oneStatement of [true, false]) {
        const who = consumer();
        const request = {
          query,
          shape: answerShape(Microversion.from("1.39")),
          consumers: [{ consumerUuid: who.consumer_uuid, projectId: who.project_id, userId: who.user_id, consumerType: who.consumer_type }],
          pick,
          alternates: 3,
          allOrNothing: true,
        };
        used.length = 0;
        const outcome = await claim(store, service, request, { oneStatement });
        expect(used).toEqual([oneStatement ? "statement" : "transaction"]);
        outcomes.push({ ...outcome, claims: outcome.claims.map((c) => ({ ...c, consumerUuid: "" })), written: await allocationsOf(db.t, who.consumer_uuid) });
        // Back to the same cloud for the other path (the generations move on: compared apart).
        expect((await db.t.request("DELETE", `/allocations/${who.consumer_uuid}`)).status).toBe(204);
      }
      const [viaStatement, viaTransaction] = outcomes;
      const [[rp, claimed]] = Object.entries(viaStatement.claims[0].allocations);
      expect(viaTransaction.claims[0].allocations[rp].generation).toBe(claimed.generation + 1);
      viaTransaction.claims[0].allocations[rp].generation = claimed.generation;
      expect(viaStatement).toEqual(viaTransaction);
    }
    expect(await brokenInvariants(db.t)).toEqual([]);
  });
});

describe("the transaction's first-free lock and a host filled since the answer", () => {
  it("passes over the host without locking it and claims the next one", async () => {
    const next = await createProvider(db.t, { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } });
    // The claims' project and user become known; the host keeps 3 VCPU.
    expect((await post("VCPU:1")).status).toBe(200);
    const service = new CandidatesService(db.t.database.db, db.t.config);
    // A row lock leaves the locker's transaction id in the row's xmax (the writer's foreign-key check leaves its own).
    const xmax = () => db.t.sql("SELECT xmax::text AS xmax FROM resource_providers WHERE id = $1", [host.id]);
    let filled: unknown;
    // The answer is read, then another writer fills the host and commits: the claim's transaction works from a stale answer.
    const staleAnswer = {
      answer: async (...args: Parameters<CandidatesService["answer"]>) => {
        const answered = await service.answer(...args);
        await addUsageUncommitted(3);
        await db.own.query("COMMIT");
        filled = await xmax();
        return answered;
      },
    };
    const [a, b] = [consumer(), consumer()];
    const request = {
      query: parseCandidatesQuery([...new URLSearchParams("resources=VCPU:1").entries()], Microversion.from("1.39")),
      shape: answerShape(Microversion.from("1.39")),
      consumers: [a, b].map((who) => ({ consumerUuid: who.consumer_uuid, projectId: who.project_id, userId: who.user_id, consumerType: who.consumer_type })),
      pick: "first" as const,
      alternates: 0,
      allOrNothing: true,
    };
    const outcome = await claim({ db: db.t.database.db, allocationRetries: 10 }, staleAnswer, request);
    expect(outcome.claims.map((c) => Object.keys(c.allocations))).toEqual([[next.uuid], [next.uuid]]);
    // The filled host's row was not locked by the claim.
    expect(await xmax()).toEqual(filled);
    expect(await db.t.sql("SELECT used FROM inventories WHERE resource_provider_id = $1 ORDER BY id", [host.id])).toEqual([{ used: 4 }, { used: 0 }]);
    expect(await brokenInvariants(db.t)).toEqual([]);
  });
});
