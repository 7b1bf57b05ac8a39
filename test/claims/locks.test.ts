/**
 * What a claim does with hosts another writer holds, made deterministic by
 * holding provider row locks from a connection of the test's own: the first
 * pass skips held hosts (in batches of its first-free statement) and takes
 * the best free one; when every fitting host is held, the second pass waits
 * for a lock instead of answering 409.
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

const post = (body: unknown) => t.request("POST", "/claims?resources=VCPU:1", { body, version: "1.39" });

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
});
