/**
 * Placement 14.0.0's over-capacity rule under races: a provider already over
 * capacity (reserved raised under its allocations) takes a write that does
 * not raise its usage of a class and refuses one that does, and a claim for
 * the last units still lets exactly as many in as fit. Placement's own
 * implementation overcommits in the first scene on PostgreSQL
 * (docs/placement-bugs.md); each scene here runs with real parallel
 * connections, in one process and across two, and ends by reading the
 * tables: usage as the successful writes say, never above what the rule
 * allows, the stored usage equal to the allocations.
 */
import { capacitySql } from "../../src/services/rules/capacity.js";
import { beforeAll, describe, expect, it } from "vitest";
import { newUuid, type Harness } from "../support/harness.js";
import { claimBody, createProvider, emptyConsumers, providerGeneration, usageDrift, usedOn, type Provider } from "./fixtures.js";
import { count, details, TRANSPORTS, useRaceHarness, type Reply, type Send } from "./race-transports.js";

/** Connections of the in-process pool (half that per server process): as many as the largest scene sends at once. */
const CLIENTS = 16;
const ROUNDS = 5;
const EXCEEDS = "The requested amount would exceed the capacity";

const race = useRaceHarness(CLIENTS);
let t: Harness;
beforeAll(() => {
  t = race.harness();
});

/** Capacity of the provider's VCPU, as the rule computes it. */
async function capacityOf(rp: Provider): Promise<number> {
  const [row] = await t.sql<{ capacity: number }>(
    `SELECT ${capacitySql("i")}::int AS capacity FROM inventories i
     JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.resource_provider_id = $1 AND rc.name = 'VCPU'`,
    [rp.id],
  );
  return row.capacity;
}

/** What each consumer holds on each provider, as the allocations table says. */
async function holdings(consumers: readonly string[]): Promise<Map<string, Record<number, number>>> {
  const rows = await t.sql<{ uuid: string; provider: number; used: number }>(
    `SELECT c.uuid, a.resource_provider_id AS provider, a.used FROM allocations a JOIN consumers c ON c.id = a.consumer_id
     WHERE c.uuid = ANY($1)`,
    [consumers],
  );
  const held = new Map<string, Record<number, number>>();
  for (const r of rows) held.set(r.uuid, { ...held.get(r.uuid), [r.provider]: r.used });
  return held;
}

/** A 1.39 body: `resources` on the provider, or nothing at all when `provider` is null. */
function body(provider: Provider | null, resources: Record<string, number>, generation: number | null = null) {
  const written = claimBody(provider?.uuid ?? "", resources, generation, { consumer_type: "INSTANCE" });
  return provider ? written : { ...written, allocations: {} };
}

async function storedUsageMatches() {
  expect(await usageDrift(t)).toEqual([]);
  expect(await emptyConsumers(t)).toEqual([]);
}

describe.each(TRANSPORTS)("the over-capacity rule under races (%s)", (mode) => {
  const send = (...args: Parameters<Send>) => race.send(mode)(...args);
  const put = (consumer: string, body: object) => send("PUT", `/allocations/${consumer}`, body);

  /** `n` consumers holding `each` VCPU on the provider, written through the API; then reserved raised to `reserved`. */
  async function heldThenReserved(rp: Provider, n: number, each: number, reserved: number): Promise<string[]> {
    const consumers = Array.from({ length: n }, () => newUuid());
    for (const c of consumers) expect((await put(c, body(rp, { VCPU: each }))).status).toBe(204);
    await t.sql(
      "UPDATE inventories SET reserved = $2 WHERE resource_provider_id = $1 AND resource_class_id = (SELECT id FROM resource_classes WHERE name = 'VCPU')",
      [rp.id, reserved],
    );
    return consumers;
  }

  it("lets exactly 3 of 8 concurrent 1-VCPU claims onto 4 VCPU with 1 used, round after round", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const rp = await createProvider(t, { VCPU: { total: 4 } });
      expect((await put(newUuid(), body(rp, { VCPU: 1 }))).status).toBe(204);
      const before = await providerGeneration(t, rp.id);
      const consumers = Array.from({ length: 8 }, () => newUuid());
      const replies = await Promise.all(consumers.map((c) => put(c, body(rp, { VCPU: 1 }))));
      expect(count(replies, 204), `round ${round}`).toBe(3);
      expect(count(replies, 409)).toBe(5);
      for (const d of details(replies)) expect(d).toContain(EXCEEDS);
      expect(await usedOn(t, rp.id, "VCPU")).toBe(4);
      expect(await providerGeneration(t, rp.id)).toBe(before + 3);
      const held = await holdings(consumers);
      expect([...held.keys()].sort()).toEqual(consumers.filter((_, i) => replies[i].status === 204).sort());
    }
    await storedUsageMatches();
  });

  it("refuses every concurrent new claim on a provider over capacity, and keeps its usage", async () => {
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    await heldThenReserved(rp, 6, 1, 4);
    const replies = await Promise.all(Array.from({ length: 16 }, () => put(newUuid(), body(rp, { VCPU: 1 }))));
    expect(count(replies, 409)).toBe(16);
    for (const d of details(replies)) expect(d).toContain(EXCEEDS);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(6);
    await storedUsageMatches();
  });

  it("takes concurrent shrinking and same-size writes on an over-capacity provider, and a growth only where it fits", async () => {
    // 8 consumers of 1 VCPU on 8, reserved 2: capacity 6, usage 8.
    const rp = await createProvider(t, { VCPU: { total: 8 } });
    const consumers = await heldThenReserved(rp, 8, 1, 2);
    expect(await capacityOf(rp)).toBe(6);
    const [shrinking, same, growing] = [consumers.slice(0, 4), consumers.slice(4, 6), consumers.slice(6, 8)];
    const claimers = Array.from({ length: 4 }, () => newUuid());
    const wanted = new Map<string, number>([
      ...shrinking.map((c) => [c, 0] as const),
      ...same.map((c) => [c, 1] as const),
      ...growing.map((c) => [c, 2] as const),
      ...claimers.map((c) => [c, 1] as const),
    ]);
    const writes = [...wanted].map(([c, vcpu]) => {
      const generation = claimers.includes(c) ? null : 1;
      return put(c, vcpu === 0 ? body(null, {}, generation) : body(rp, { VCPU: vcpu }, generation));
    });
    const replies = await Promise.all(writes);
    const byConsumer = new Map<string, Reply>([...wanted.keys()].map((c, i) => [c, replies[i]]));

    // Writes that do not raise the usage always land, however the others interleave.
    for (const c of [...shrinking, ...same]) expect(byConsumer.get(c)!.status, byConsumer.get(c)!.body?.errors?.[0]?.detail).toBe(204);
    // A write that raises it lands only if it fit when it ran: all shrinks done leave 8 - 4 = 4 of 6, room for 2 more.
    const raised = [...growing, ...claimers].filter((c) => byConsumer.get(c)!.status === 204);
    for (const c of [...growing, ...claimers]) expect([204, 409]).toContain(byConsumer.get(c)!.status);
    for (const d of details(replies)) expect(d).toContain(EXCEEDS);
    expect(raised.length).toBeLessThanOrEqual(2);

    // The tables hold exactly what the successful writes asked for.
    const held = await holdings([...wanted.keys()]);
    let expected = 0;
    for (const [c, vcpu] of wanted) {
      const now = byConsumer.get(c)!.status === 204 ? vcpu : consumers.includes(c) ? 1 : 0;
      expected += now;
      expect(held.get(c)?.[rp.id] ?? 0, c).toBe(now);
    }
    expect(await usedOn(t, rp.id, "VCPU")).toBe(expected);
    expect(expected).toBe(4 + raised.length);
    expect(expected).toBeLessThanOrEqual(await capacityOf(rp));
    await storedUsageMatches();
  });

  it("takes concurrent swaps between two over-capacity providers and refuses the one-way moves onto them", async () => {
    // Each provider: 8 consumers of 1 VCPU on 8, reserved 4: capacity 4, usage 8.
    const a = await createProvider(t, { VCPU: { total: 8 } });
    const b = await createProvider(t, { VCPU: { total: 8 } });
    const onA = await heldThenReserved(a, 8, 1, 4);
    const onB = await heldThenReserved(b, 8, 1, 4);
    // Four swaps (one consumer A -> B with one B -> A, in one POST: neither usage rises),
    // four one-way moves (each raises its destination's usage), and two consumers on A
    // emptied, which lowers A to 6 and never to its capacity.
    const swaps = Array.from({ length: 4 }, (_, i) => [onA[i], onB[i]] as const);
    const oneWay = [
      [onA[4], b],
      [onA[5], b],
      [onB[4], a],
      [onB[5], a],
    ] as const;
    const emptied = onA.slice(6, 8);
    const replies = await Promise.all([
      ...swaps.map(([x, y]) => send("POST", "/allocations", { [x]: body(b, { VCPU: 1 }, 1), [y]: body(a, { VCPU: 1 }, 1) })),
      ...oneWay.map(([c, to]) => put(c, body(to, { VCPU: 1 }, 1))),
      ...emptied.map((c) => put(c, body(null, {}, 1))),
    ]);
    const [swapReplies, moveReplies, emptyReplies] = [replies.slice(0, 4), replies.slice(4, 8), replies.slice(8)];
    expect(swapReplies.map((r) => r.status)).toEqual([204, 204, 204, 204]);
    expect(emptyReplies.map((r) => r.status)).toEqual([204, 204]);
    expect(moveReplies.map((r) => r.status)).toEqual([409, 409, 409, 409]);
    for (const d of details(moveReplies)) expect(d).toContain(EXCEEDS);

    const held = await holdings([...onA, ...onB]);
    for (const [x, y] of swaps) {
      expect(held.get(x)).toEqual({ [b.id]: 1 });
      expect(held.get(y)).toEqual({ [a.id]: 1 });
    }
    for (const [c] of oneWay) expect(held.get(c)).toEqual({ [onA.includes(c) ? a.id : b.id]: 1 });
    for (const c of emptied) expect(held.has(c)).toBe(false);
    expect(await usedOn(t, a.id, "VCPU")).toBe(6);
    expect(await usedOn(t, b.id, "VCPU")).toBe(8);
    await storedUsageMatches();
  });
});
