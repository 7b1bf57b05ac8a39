/**
 * Races: many real clients writing allocations at once, each scenario ended
 * by invariant checks read straight from the tables. Every scenario runs
 * twice: through the in-process app (one pool, 40 real connections), and
 * against two separate server processes on the same database, requests
 * alternating between them, so correctness cannot rest on anything shared
 * in memory. The second needs `npm run build` (it starts dist/src/cli.js).
 */
import { beforeAll, describe, expect, it } from "vitest";
import { newUuid, type Harness } from "../support/harness.js";
import { claimBody, createProvider, emptyConsumers, overcommitted, PROJECT, providerGeneration, usageDrift, usedOn, USER } from "./fixtures.js";
import { count, details, TRANSPORTS, useRaceHarness, type Send } from "./race-transports.js";

const CLIENTS = 40;

const race = useRaceHarness(CLIENTS);
let t: Harness;
beforeAll(() => {
  t = race.harness();
});

async function noBrokenInvariants() {
  expect(await overcommitted(t)).toEqual([]);
  expect(await emptyConsumers(t)).toEqual([]);
  expect(await usageDrift(t)).toEqual([]);
}

describe.each(TRANSPORTS)("races (%s)", (mode) => {
  const send = (...args: Parameters<Send>) => race.send(mode)(...args);

  it("lets exactly as many claims as fit take the last units of a provider", async () => {
    const rp = await createProvider(t, { VCPU: { total: 16 } });
    const bystander = await createProvider(t, { VCPU: { total: 16 } });
    expect((await send("PUT", `/allocations/${newUuid()}`, claimBody(rp.uuid, { VCPU: 11 }, null, { consumer_type: "INSTANCE" }))).status).toBe(204);
    const before = await providerGeneration(t, rp.id);
    const consumers = Array.from({ length: CLIENTS }, () => newUuid());
    const replies = await Promise.all(
      consumers.map((c) => send("PUT", `/allocations/${c}`, claimBody(rp.uuid, { VCPU: 1 }, null, { consumer_type: "INSTANCE" }))),
    );
    expect(count(replies, 204)).toBe(5);
    expect(count(replies, 409)).toBe(CLIENTS - 5);
    for (const d of details(replies)) expect(d).toContain("The requested amount would exceed the capacity");
    expect(await usedOn(t, rp.id, "VCPU")).toBe(16);
    expect(await providerGeneration(t, rp.id)).toBe(before + 5);
    const held = await t.sql("SELECT 1 FROM consumers WHERE uuid = ANY($1)", [consumers]);
    expect(held).toHaveLength(5);
    expect(await usedOn(t, bystander.id, "VCPU")).toBe(0);
    expect(await providerGeneration(t, bystander.id)).toBe(0);
    await noBrokenInvariants();
  });

  it("never surfaces a deadlock when claims name providers and consumers in opposite orders", async () => {
    const a = await createProvider(t, { VCPU: { total: 1000, max_unit: 10 } });
    const b = await createProvider(t, { VCPU: { total: 1000, max_unit: 10 } });
    const pairs = Array.from({ length: CLIENTS / 2 }, () => [newUuid(), newUuid()] as const);
    const mirrored = Array.from({ length: CLIENTS / 2 }, () => [newUuid(), newUuid()] as const);
    const one = (rp: string) => ({ allocations: { [rp]: { resources: { VCPU: 1 } } }, project_id: PROJECT, user_id: USER, consumer_generation: null, consumer_type: "INSTANCE" });
    const replies = await Promise.all([
      ...pairs.map(([x, y]) => send("POST", "/allocations", { [x]: one(a.uuid), [y]: one(b.uuid) })),
      ...mirrored.map(([x, y]) => send("POST", "/allocations", { [y]: one(b.uuid), [x]: one(a.uuid) })),
      ...Array.from({ length: CLIENTS }, (_, i) =>
        send("PUT", `/allocations/${newUuid()}`, {
          allocations: i % 2 ? { [a.uuid]: { resources: { VCPU: 2 } }, [b.uuid]: { resources: { VCPU: 2 } } } : { [b.uuid]: { resources: { VCPU: 2 } }, [a.uuid]: { resources: { VCPU: 2 } } },
          project_id: PROJECT,
          user_id: USER,
          consumer_generation: null,
          consumer_type: "INSTANCE",
        }),
      ),
    ]);
    expect(replies.map((r) => r.status)).toEqual(replies.map(() => 204));
    expect(await usedOn(t, a.id, "VCPU")).toBe(CLIENTS + 2 * CLIENTS);
    expect(await usedOn(t, b.id, "VCPU")).toBe(CLIENTS + 2 * CLIENTS);
    expect(await providerGeneration(t, a.id)).toBe(2 * CLIENTS);
    expect(await providerGeneration(t, b.id)).toBe(2 * CLIENTS);
    await noBrokenInvariants();
  });

  it("lets exactly one writer win when many update one consumer from the same generation", async () => {
    const rp = await createProvider(t, { VCPU: { total: 1000, max_unit: 100 } });
    const consumer = newUuid();
    expect((await send("PUT", `/allocations/${consumer}`, claimBody(rp.uuid, { VCPU: 1 }, null, { consumer_type: "INSTANCE" }))).status).toBe(204);
    const replies = await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) => send("PUT", `/allocations/${consumer}`, claimBody(rp.uuid, { VCPU: i + 2 }, 1, { consumer_type: "INSTANCE" }))),
    );
    expect(count(replies, 204)).toBe(1);
    expect(count(replies, 409)).toBe(CLIENTS - 1);
    for (const d of details(replies)) expect(d).toContain("consumer generation conflict - expected 2 but got 1");
    const winner = replies.findIndex((r) => r.status === 204);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(winner + 2);
    const [row] = await t.sql<{ generation: number }>("SELECT generation FROM consumers WHERE uuid = $1", [consumer]);
    expect(row.generation).toBe(2);
    await noBrokenInvariants();
  });

  it("lets exactly one of many writers create the same new consumer, without a 500", async () => {
    const rp = await createProvider(t, { VCPU: { total: 1000, max_unit: 100 } });
    const consumer = newUuid();
    const project = `project-${newUuid()}`;
    const replies = await Promise.all(
      Array.from({ length: CLIENTS }, (_, i) =>
        send("PUT", `/allocations/${consumer}`, { ...claimBody(rp.uuid, { VCPU: i + 1 }, null, { consumer_type: `TYPE_${i % 3}` }), project_id: project }),
      ),
    );
    expect(count(replies, 204)).toBe(1);
    expect(count(replies, 409)).toBe(CLIENTS - 1);
    for (const d of details(replies)) expect(d).toContain("consumer generation conflict - expected 1 but got None");
    const winner = replies.findIndex((r) => r.status === 204);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(winner + 1);
    // The project every writer named at once exists once.
    expect(await t.sql("SELECT 1 FROM projects WHERE external_id = $1", [project])).toHaveLength(1);
    await noBrokenInvariants();
  });

  it("never loses track of a consumer deleted while others rewrite it", async () => {
    const rp = await createProvider(t, { VCPU: { total: 1000, max_unit: 100 } });
    const consumers = Array.from({ length: 8 }, () => newUuid());
    for (const c of consumers) await send("PUT", `/allocations/${c}`, claimBody(rp.uuid, { VCPU: 1 }, null, { consumer_type: "INSTANCE" }));
    const replies = await Promise.all(
      consumers.flatMap((c) => [
        send("DELETE", `/allocations/${c}`),
        ...Array.from({ length: 4 }, () => send("PUT", `/allocations/${c}`, claimBody(rp.uuid, { VCPU: 2 }, 1, { consumer_type: "INSTANCE" }))),
      ]),
    );
    for (const r of replies) expect([204, 404, 409]).toContain(r.status);
    // Each consumer ends either deleted or holding exactly one write's allocation.
    const held = await t.sql<{ uuid: string; used: number }>(
      "SELECT c.uuid, a.used FROM consumers c JOIN allocations a ON a.consumer_id = c.id WHERE c.uuid = ANY($1)",
      [consumers],
    );
    for (const row of held) expect([1, 2]).toContain(row.used);
    expect(await usedOn(t, rp.id, "VCPU")).toBe(held.reduce((sum, r) => sum + r.used, 0));
    await noBrokenInvariants();
  });

  it("keeps Nova's move operation consistent while new claims land on both hosts", async () => {
    const source = await createProvider(t, { VCPU: { total: 24, max_unit: 4 } });
    const dest = await createProvider(t, { VCPU: { total: 24, max_unit: 4 } });
    const instances = Array.from({ length: 8 }, () => newUuid());
    for (const i of instances) {
      expect((await send("PUT", `/allocations/${i}`, claimBody(source.uuid, { VCPU: 2 }, null, { consumer_type: "INSTANCE" }))).status).toBe(204);
    }
    const generations = { [source.id]: await providerGeneration(t, source.id), [dest.id]: await providerGeneration(t, dest.id) };
    const touched = (...ids: number[]) => {
      for (const id of ids) generations[id]++;
    };
    const entry = (rp: string | undefined, gen: number | null, type: string) => ({
      allocations: rp ? { [rp]: { resources: { VCPU: 2 } } } : {},
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: gen,
      consumer_type: type,
    });
    const where = new Map<string, "source" | "dest">(instances.map((i) => [i, "source"]));
    const instanceGeneration = new Map(instances.map((i) => [i, 1]));

    // Move: the source allocation goes to a migration consumer, the instance to the destination; then confirm or revert.
    const move = async (instance: string, n: number) => {
      const migration = newUuid();
      const swap = await send("POST", "/allocations", { [migration]: entry(source.uuid, null, "MIGRATION"), [instance]: entry(dest.uuid, 1, "INSTANCE") });
      if (swap.status !== 204) return swap.status;
      touched(source.id, dest.id);
      where.set(instance, "dest");
      instanceGeneration.set(instance, 2);
      if (n % 2 === 0) {
        // Confirm: drop the migration's hold on the source.
        const confirm = await send("PUT", `/allocations/${migration}`, entry(undefined, 1, "MIGRATION"));
        expect(confirm.status).toBe(204);
        touched(source.id);
      } else {
        // Revert: the instance goes back to the source, the migration's allocation disappears, in one request.
        const revert = await send("POST", "/allocations", { [instance]: entry(source.uuid, 2, "INSTANCE"), [migration]: entry(undefined, 1, "MIGRATION") });
        expect(revert.status).toBe(204);
        touched(source.id);
        where.set(instance, "source");
        instanceGeneration.set(instance, 3);
      }
      return 204;
    };
    const claims: string[] = [];
    const claim = async (rp: { id: number; uuid: string }) => {
      const c = newUuid();
      const res = await send("PUT", `/allocations/${c}`, claimBody(rp.uuid, { VCPU: 1 }, null, { consumer_type: "INSTANCE" }));
      if (res.status === 204) {
        claims.push(`${rp.id}`);
        touched(rp.id);
      } else {
        expect(res.status).toBe(409);
        expect(res.body.errors[0].detail).toContain("exceed the capacity");
      }
    };
    const moveStatuses = await Promise.all([
      ...instances.map((i, n) => move(i, n)),
      ...Array.from({ length: 16 }, (_, n) => claim(n % 2 ? source : dest)),
      ...Array.from({ length: 16 }, (_, n) => claim(n % 2 ? dest : source)),
    ]);
    for (const s of moveStatuses.slice(0, instances.length)) expect([204, 409]).toContain(s);

    const onSource = [...where.values()].filter((w) => w === "source").length;
    const expectSource = 2 * onSource + claims.filter((id) => id === `${source.id}`).length;
    const expectDest = 2 * (instances.length - onSource) + claims.filter((id) => id === `${dest.id}`).length;
    expect(await usedOn(t, source.id, "VCPU")).toBe(expectSource);
    expect(await usedOn(t, dest.id, "VCPU")).toBe(expectDest);
    for (const i of instances) {
      const rows = await t.sql<{ provider: number; used: number; generation: number }>(
        "SELECT a.resource_provider_id AS provider, a.used, c.generation FROM allocations a JOIN consumers c ON c.id = a.consumer_id WHERE c.uuid = $1",
        [i],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0]).toEqual({ provider: where.get(i) === "source" ? source.id : dest.id, used: 2, generation: instanceGeneration.get(i) });
    }
    // No migration consumer survives its confirm or revert.
    expect(await t.sql("SELECT 1 FROM consumers c JOIN consumer_types ct ON ct.id = c.consumer_type_id WHERE ct.name = 'MIGRATION'")).toHaveLength(0);
    expect(await providerGeneration(t, source.id)).toBe(generations[source.id]);
    expect(await providerGeneration(t, dest.id)).toBe(generations[dest.id]);
    await noBrokenInvariants();
  });
});
