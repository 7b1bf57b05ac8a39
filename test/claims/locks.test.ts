/**
 * What a claim does with hosts another writer holds, made deterministic by
 * holding provider row locks from a connection of the test's own: the first
 * pass skips held hosts (in batches of its first-free statement) and takes
 * the best free one; when every fitting host is held, the claim waits for
 * a lock instead of answering 409: a claim of one instance waits in the one
 * statement that found them held, holding no transaction open while it waits.
 */
import type pg from "pg";
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Harness } from "../support/harness.js";
import { createProvider, type Provider } from "../allocations/fixtures.js";
import { brokenInvariants, claimBody, consumer, emptyCloud, harnessWithOwnConnection } from "./support.js";

const ctx = harnessWithOwnConnection();
let t: Harness;
let other: pg.Client;
beforeAll(() => {
  ({ t, own: other } = ctx);
});

let nodes: Provider[];
beforeEach(async () => {
  await emptyCloud(t);
  nodes = [];
  // More hosts than one first-free statement is offered, so the held ones span several.
  for (let i = 0; i < 45; i++) nodes.push(await createProvider(t, { VCPU: { total: 4 } }));
});

/** Holds the provider rows of `held` as an ordinary write does, until the returned release is called. */
async function hold(held: Provider[]): Promise<() => Promise<void>> {
  await other.query("BEGIN");
  await other.query("SELECT id FROM resource_providers WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE", [held.map((n) => n.id)]);
  return async () => {
    await other.query("ROLLBACK");
  };
}

const post = (body: unknown, resources = "VCPU:1") => t.request("POST", `/claims?resources=${resources}`, { body, version: "1.39" });

/** The claim's statement (named pl_claim on its connection) as it waits for a provider's row lock; fails after `ms`. */
async function waitingStatement(ms = 10_000): Promise<{ state: string; waiting: string }> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const rows = await t.sql<{ state: string; waiting: string }>(
      `SELECT state, wait_event_type AS waiting FROM pg_stat_activity
       WHERE query LIKE '/*named:pl_claim*/%' AND wait_event_type = 'Lock' AND datname = current_database()`,
    );
    if (rows.length > 0) return rows[0];
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("no claim statement waited for a provider");
}

describe("POST /claims and hosts held by other writers", () => {
  it("skips every held host, past the first batch, and takes the first free one", async () => {
    const release = await hold(nodes.slice(0, 40));
    try {
      const res = await post(claimBody({ pick: "first" }));
      expect(res.status).toBe(200);
      expect(Object.keys(res.body.claims[0].allocations)).toEqual([nodes[40].uuid]);
    } finally {
      await release();
    }
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("waits for a held host when every fitting one is held, instead of answering 409", async () => {
    const release = await hold(nodes);
    const who = consumer();
    const claim = post(claimBody({ pick: "first" }, [who]));
    // The claim is blocked on a lock: nothing is written while the hosts are held.
    await new Promise((r) => setTimeout(r, 300));
    expect(await t.sql("SELECT 1 FROM allocations")).toEqual([]);
    await release();
    const res = await claim;
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.claims[0].allocations)).toHaveLength(1);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("waits in the statement that found every host held: the consumer it inserted is the only one", async () => {
    // The claims' project and user become known (the statement only joins existing ones).
    expect((await post(claimBody({ pick: "first" }))).status).toBe(200);
    // Each statement that inserts a consumer takes a new id, and a rolled-back insert does not give it back.
    const [{ last }] = await t.sql<{ last: string }>("SELECT last_value::text AS last FROM consumers_id_seq");
    const release = await hold(nodes);
    const who = consumer();
    const claim = post(claimBody({ pick: "first" }, [who]));
    try {
      await waitingStatement();
    } finally {
      await release();
    }
    expect((await claim).status).toBe(200);
    // A statement that had found the hosts held and rolled back, before one that waited, would have taken an id too.
    expect(await t.sql("SELECT id::text AS id FROM consumers WHERE uuid = $1", [who.consumer_uuid])).toEqual([{ id: String(Number(last) + 1) }]);
    expect(await brokenInvariants(t)).toEqual([]);
  });

  it("waits in a statement of its own, not a transaction holding other hosts, and passes over a host its writer filled", async () => {
    // The claims' project and user become known (the statement only joins existing ones); node 0 keeps 3 VCPU.
    expect((await post(claimBody({ pick: "first" }))).status).toBe(200);
    await hold(nodes);
    const who = consumer();
    const claim = post(claimBody({ pick: "first" }, [who]), "VCPU:2");
    // One statement waits for the best host (node 0), not a transaction that locked and holds others.
    expect(await waitingStatement()).toEqual({ state: "active", waiting: "Lock" });
    // The holder fills node 0 and commits: the claim finds it full under its lock and takes the next host.
    const [c] = (
      await other.query<{ id: number }>(
        "INSERT INTO consumers (uuid, project_id, user_id, generation) SELECT gen_random_uuid()::text, p.id, u.id, 1 FROM projects p, users u LIMIT 1 RETURNING id",
      )
    ).rows;
    await other.query("INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used) SELECT $1, $2, id, 3 FROM resource_classes WHERE name = 'VCPU'", [
      c.id,
      nodes[0].id,
    ]);
    await other.query("COMMIT");
    const res = await claim;
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.claims[0].allocations)).toEqual([nodes[1].uuid]);
    expect(await t.sql("SELECT used FROM inventories WHERE resource_provider_id = $1", [nodes[0].id])).toEqual([{ used: 4 }]);
    expect(await brokenInvariants(t)).toEqual([]);
  });
});
