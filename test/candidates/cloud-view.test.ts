/**
 * Candidates are answered from a copy of the cloud kept in memory and
 * brought up to date from the change feed at every request (cloud-view.ts);
 * on flat clouds here (tree-view.test.ts has the copy's trees).
 * These tests show a summary first (so the provider is in the copy), then
 * change the provider every way it can change, through the API and behind
 * its back, and check that the next answer shows the change; then the cases
 * where the feed cannot say what changed, and writers racing readers.
 */
import { randomUUID } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import v8 from "node:v8";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/database.js";
import { createLogger } from "../../src/log.js";
import { CloudView } from "../../src/services/candidates/cloud-view.js";
import type { Harness } from "../support/harness.js";
import { overcommitted, usageDrift } from "../allocations/fixtures.js";
import { alone, custom, everyPath, startData, type Data } from "./data.js";

let t: Harness;
let d: Data;
beforeAll(async () => void ({ t, d } = await startData()));
afterAll(async () => t.close());

const summaryOf = async (uuid: string, resources: string) => {
  const res = await t.request("GET", `/allocation_candidates?resources=${resources}`);
  expect(res.status).toBe(200);
  return res.body.provider_summaries[uuid];
};

const generation = async (uuid: string) => (await t.request("GET", `/resource_providers/${uuid}`)).body.generation as number;

describe("the flat view", () => {
  it("follow inventory, trait and usage changes made through the API after a summary was shown", async () => {
    const [CPU, MEM, A, B] = [custom("CPU"), custom("MEM"), custom("A"), custom("B")];
    const p = await d.provider({ inventory: { [CPU]: 4 }, traits: [A] });
    await t.request("PUT", `/resource_classes/${MEM}`);
    await t.request("PUT", `/traits/${B}`);
    expect(await summaryOf(p.uuid, `${CPU}:1`)).toEqual({
      resources: { [CPU]: { capacity: 4, used: 0 } },
      traits: [A],
      parent_provider_uuid: null,
      root_provider_uuid: p.uuid,
    });

    const put = await t.request("PUT", `/resource_providers/${p.uuid}/inventories`, {
      body: { resource_provider_generation: await generation(p.uuid), inventories: { [CPU]: { total: 8 }, [MEM]: { total: 16, allocation_ratio: 1.5 } } },
    });
    expect(put.status).toBe(200);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 8, used: 0 }, [MEM]: { capacity: 24, used: 0 } });

    const traits = await t.request("PUT", `/resource_providers/${p.uuid}/traits`, {
      body: { resource_provider_generation: await generation(p.uuid), traits: [A, B] },
    });
    expect(traits.status).toBe(200);
    // Traits in id order: A was created first.
    expect((await summaryOf(p.uuid, `${CPU}:1`)).traits).toEqual([A, B]);

    const consumer = randomUUID();
    const claim = await t.request("PUT", `/allocations/${consumer}`, {
      body: {
        allocations: { [p.uuid]: { resources: { [CPU]: 3, [MEM]: 5 } } },
        project_id: randomUUID(),
        user_id: randomUUID(),
        consumer_generation: null,
        consumer_type: "INSTANCE",
      },
    });
    expect(claim.status).toBe(204);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 8, used: 3 }, [MEM]: { capacity: 24, used: 5 } });

    // Freeing usage does not bump the generation (as in Placement); the summary must still show it.
    const before = await generation(p.uuid);
    expect((await t.request("DELETE", `/allocations/${consumer}`)).status).toBe(204);
    expect(await generation(p.uuid)).toBe(before);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 8, used: 0 }, [MEM]: { capacity: 24, used: 0 } });

    // A provider deleted is gone from the copy, while another that changed with it stays.
    const q = await d.provider({ inventory: { [CPU]: 4 } });
    expect(await summaryOf(q.uuid, `${CPU}:1`)).toBeDefined();
    expect((await t.request("DELETE", `/resource_providers/${p.uuid}`)).status).toBe(204);
    await t.sql(`UPDATE inventories SET total = 5 WHERE resource_provider_id = $1`, [q.id]);
    expect(await summaryOf(p.uuid, `${CPU}:1`)).toBeUndefined();
    expect((await summaryOf(q.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 5, used: 0 } });
  });

  it("follow changes written straight into the tables, which bump no generation", async () => {
    const [CPU, A, B] = [custom("CPU"), custom("A"), custom("B")];
    const p = await d.provider({ inventory: { [CPU]: 4 }, traits: [A] });
    expect(await summaryOf(p.uuid, `${CPU}:1`)).toMatchObject({ resources: { [CPU]: { capacity: 4, used: 0 } }, traits: [A] });
    const gen = await generation(p.uuid);

    // An operator's UPDATE in psql: only the row changes.
    await t.sql(`UPDATE inventories SET total = 6, allocation_ratio = 2 WHERE resource_provider_id = $1`, [p.id]);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 12, used: 0 } });
    await d.trait(p, B);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).traits).toEqual([A, B]);
    await t.sql(`DELETE FROM resource_provider_traits WHERE resource_provider_id = $1`, [p.id]);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).traits).toEqual([]);
    const MEM = custom("MEM");
    await d.inventory(p, MEM, { total: 7 });
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources).toEqual({ [CPU]: { capacity: 12, used: 0 }, [MEM]: { capacity: 7, used: 0 } });
    await d.allocate(p, MEM, 2);
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources[MEM]).toEqual({ capacity: 7, used: 2 });
    expect(await generation(p.uuid)).toBe(gen);
  });

  it("reads the whole cloud again when the feed rows after its place were pruned", async () => {
    const CPU = custom("CPU");
    const p = await d.provider({ inventory: { [CPU]: 4 } });
    const q = await d.provider({ inventory: { [CPU]: 4 } });
    expect((await summaryOf(p.uuid, `${CPU}:1`)).resources[CPU].capacity).toBe(4);
    await t.sql(`UPDATE provider_changes_horizon SET retention = 1, prune_every = 1`);
    try {
      // p's change gets the next seq; each later transaction prunes every row but the newest.
      await t.sql(`UPDATE inventories SET total = 6 WHERE resource_provider_id = $1`, [p.id]);
      await t.sql(`UPDATE inventories SET total = 5 WHERE resource_provider_id = $1`, [q.id]);
      await t.sql(`UPDATE inventories SET total = 3 WHERE resource_provider_id = $1`, [q.id]);
      const [{ rows }] = await t.sql<{ rows: number }>(`SELECT count(*)::int AS rows FROM provider_changes`);
      expect(rows).toBe(1);
      expect((await summaryOf(p.uuid, `${CPU}:1`)).resources[CPU].capacity).toBe(6);
      expect((await summaryOf(q.uuid, `${CPU}:1`)).resources[CPU].capacity).toBe(3);
    } finally {
      await t.sql(`UPDATE provider_changes_horizon SET retention = 100000, prune_every = 1000`);
    }
  });

  it("keeps each writer's own writes visible to its next read while other writers race it", async () => {
    const CPU = custom("CPU");
    const workers = 6;
    const providers = await Promise.all(Array.from({ length: workers }, () => d.provider({ inventory: { [CPU]: 100 } })));
    // Two apps, so two copies follow the feed at once.
    const other = t.requestVia(alone("flat-view"));
    const claim = (uuid: string, consumer: string, amount: number) =>
      t.request("PUT", `/allocations/${consumer}`, {
        body: {
          allocations: { [uuid]: { resources: { [CPU]: amount } } },
          project_id: randomUUID(),
          user_id: randomUUID(),
          consumer_generation: null,
          consumer_type: "INSTANCE",
        },
      });
    await Promise.all(
      providers.map(async (p, w) => {
        const read = w % 2 === 0 ? t.request : other;
        let previous: string | undefined;
        for (let i = 0; i < 12; i++) {
          const amount = 1 + ((w * 7 + i * 13) % 50);
          const consumer = randomUUID();
          expect((await claim(p.uuid, consumer, amount)).status).toBe(204);
          if (previous) expect((await t.request("DELETE", `/allocations/${previous}`)).status).toBe(204);
          previous = consumer;
          const res = await read("GET", `/allocation_candidates?resources=${CPU}:1&in_tree=${p.uuid}`);
          expect(res.status).toBe(200);
          expect(res.body.provider_summaries[p.uuid].resources[CPU]).toEqual({ capacity: 100, used: amount });
        }
      }),
    );
    // The tables hold what the writers were told, and once they are done every path answers alike.
    expect(await overcommitted(t)).toEqual([]);
    expect(await usageDrift(t)).toEqual([]);
    const walk = everyPath(t);
    await walk(`resources=${CPU}:10`);
    await walk(`resources=${CPU}:60&limit=2`);
  });
});

describe("the flat view on a cloud of its own", () => {
  it("reads the whole cloud again when the feed went back (a database restored from an older backup)", async () => {
    const own = await startData();
    try {
      const CPU = custom("CPU");
      const p = await own.d.provider({ inventory: { [CPU]: 4 } });
      const summary = async () => (await own.t.request("GET", `/allocation_candidates?resources=${CPU}:1`)).body.provider_summaries[p.uuid];
      expect((await summary()).resources[CPU].capacity).toBe(4);
      // The restored database's feed is behind the copy: its next seq is one the copy has passed.
      await own.t.sql(`DELETE FROM provider_changes`);
      await own.t.sql(`SELECT setval('provider_changes_seq', 1, false)`);
      await own.t.sql(`UPDATE inventories SET total = 9 WHERE resource_provider_id = $1`, [p.id]);
      expect((await summary()).resources[CPU].capacity).toBe(9);
    } finally {
      await own.t.close();
    }
  });

  it("answers a cloud that gained a tree from the copy's trees, and by the flat pass once it is flat again", async () => {
    const own = await startData();
    try {
      const CPU = custom("CPU");
      const root = await own.d.provider({ inventory: { [CPU]: 4 } });
      const get = async () => (await own.t.request("GET", `/allocation_candidates?resources=${CPU}:1`)).body;
      expect(Object.keys((await get()).provider_summaries)).toEqual([root.uuid]);

      const child = await own.d.provider({ parent: root, inventory: { [CPU]: 2 } });
      const nested = await get();
      expect(nested.allocation_requests).toHaveLength(2);
      expect(nested.provider_summaries[child.uuid]).toMatchObject({ parent_provider_uuid: root.uuid, root_provider_uuid: root.uuid });

      await own.d.remove(child);
      expect(Object.keys((await get()).provider_summaries)).toEqual([root.uuid]);
      await own.t.sql(`UPDATE inventories SET total = 7 WHERE resource_provider_id = $1`, [root.id]);
      expect((await get()).provider_summaries[root.uuid].resources[CPU].capacity).toBe(7);
      await everyPath(own.t)(`resources=${CPU}:5`);
    } finally {
      await own.t.close();
    }
  });
});

describe("the view's bounds", () => {
  it("keeps none of a full read's rows once its copy is made, though the read opened the pool's first connection", async () => {
    // pg-pool keeps the result of a pool.query that made it open a connection for as long as that
    // connection lives: a view reading through pool.query kept its first full read (the whole cloud).
    const own = await startData();
    const database = openDatabase(own.t.url, 2, createLogger("silent"));
    const snapshot = path.join(tmpdir(), `cloud-view-${randomUUID()}.heapsnapshot`);
    try {
      const p = await own.d.provider({ inventory: { [custom("CPU")]: 4 } });
      const view = new CloudView(database.db);
      expect(await view.read({ traits: [], aggregates: [] }, (read) => read.byUuid.has(p.uuid))).toBe(true);
      v8.writeHeapSnapshot(snapshot);
      // The provider's row as the full read's text column has it ("uuid parent root"): only the read's result holds it.
      expect(readFileSync(snapshot, "utf8").includes(`"${p.uuid} 0 ${p.rootId}"`)).toBe(false);
      // And the copy itself is still there (the snapshot would not show a row a dropped view had read).
      expect(await view.read({ traits: [], aggregates: [] }, (read) => read.byUuid.has(p.uuid))).toBe(true);
    } finally {
      rmSync(snapshot, { force: true });
      await database.close();
      await own.t.close();
    }
  });

  it("builds a copy from a full read a slice at a time, with turns of the event loop between, and shows it whole", async () => {
    const own = await startData();
    const database = openDatabase(own.t.url, 2, createLogger("silent"));
    try {
      // 11,000 roots, one with a child: more than two slices of providers, and trees to make.
      await own.t.sql(`INSERT INTO resource_providers (uuid, name, generation) SELECT gen_random_uuid()::text, 'slices-' || g, 0 FROM generate_series(1, 11000) g`);
      await own.t.sql(`UPDATE resource_providers SET root_provider_id = id WHERE name LIKE 'slices-%'`);
      const parent = (await own.t.sql<{ id: number }>(`SELECT id FROM resource_providers WHERE name = 'slices-1'`))[0].id;
      await own.t.sql(`INSERT INTO resource_providers (uuid, name, generation, parent_provider_id, root_provider_id) VALUES (gen_random_uuid()::text, 'slices-child', 0, $1, $1)`, [parent]);
      const count = Number((await own.t.sql<{ n: string }>(`SELECT count(*) AS n FROM resource_providers`))[0].n);
      let turns = 0;
      const view = new CloudView(database.db, { between: async () => void turns++ });
      const seen = await view.read({ traits: [], aggregates: [] }, (read) => ({ providers: read.byUuid.size, trees: read.trees().list.length, flat: read.flat }));
      expect(seen).toEqual({ providers: count, trees: count - 1, flat: false });
      // Three slices of providers (two turns), one turn before the trees, and over ten thousand trees a thousand at a time.
      expect(turns).toBeGreaterThanOrEqual(2 + 1 + 10);
    } finally {
      await database.close();
      await own.t.close();
    }
  });

  it("leaves a cloud of more providers than it may copy to the engine, and copies it again once it is small enough", async () => {
    const own = await startData();
    try {
      const CPU = custom("CPU");
      const made = [];
      for (let i = 0; i < 3; i++) made.push(await own.d.provider({ inventory: { [CPU]: 4 } }));
      // Each read of the bounded app is a full read, so the count is looked at every time.
      const bounded = own.t.requestVia({ view: { maxProviders: 2, fullReadEveryMs: 0 } });
      const viewOnly = own.t.requestVia({ ...alone("flat-view"), view: { maxProviders: 2, fullReadEveryMs: 0 } });
      const query = `/allocation_candidates?resources=${CPU}:1`;
      const engine = await own.t.requestVia(alone("general"))("GET", query);
      const answer = await bounded("GET", query);
      expect(answer.status).toBe(200);
      expect(answer.text).toBe(engine.text);
      // The flat view alone, which declines the cloud: no path takes the request, which fails.
      expect((await viewOnly("GET", query)).status).toBe(500);
      await own.d.remove(made[2]);
      const small = await viewOnly("GET", query);
      expect(small.status).toBe(200);
      expect(Object.keys(small.body.provider_summaries).sort()).toEqual(made.slice(0, 2).map((p) => p.uuid).sort());
    } finally {
      await own.t.close();
    }
  });

  it("bounds a cloud with trees lower than a flat one: past it, the database's plan answers, and a child fewer brings the copy back", async () => {
    const own = await startData();
    try {
      const CPU = custom("CPU");
      const root = await own.d.provider({ inventory: { [CPU]: 4 } });
      const child = await own.d.provider({ parent: root, inventory: { [CPU]: 4 } });
      await own.d.provider({ parent: root, inventory: { [CPU]: 4 } });
      const view = { maxProviders: 10, maxTreeProviders: 2, fullReadEveryMs: 0 };
      const bounded = own.t.requestVia({ view });
      const treesOnly = own.t.requestVia({ ...alone("tree-view"), view });
      const query = `/allocation_candidates?resources=${CPU}:1`;
      const engine = await own.t.requestVia(alone("general"))("GET", query);
      expect((await bounded("GET", query)).text).toBe(engine.text);
      // Three providers in a tree: over the tree bound, though under the flat one.
      expect((await treesOnly("GET", query)).status).toBe(500);
      await own.d.remove(child);
      const small = await treesOnly("GET", query);
      expect(small.status).toBe(200);
      expect(small.body.allocation_requests).toHaveLength(2);
    } finally {
      await own.t.close();
    }
  });

  it("shows a write that bypassed the feed's triggers once the copy is read whole again", async () => {
    const CPU = custom("CPU");
    const p = await d.provider({ inventory: { [CPU]: 4 } });
    const often = t.requestVia({ view: { fullReadEveryMs: 0 } });
    const capacityVia = async (request: typeof often) =>
      (await request("GET", `/allocation_candidates?resources=${CPU}:1`)).body.provider_summaries[p.uuid].resources[CPU].capacity;
    expect(await capacityVia(t.request)).toBe(4);
    expect(await capacityVia(often)).toBe(4);
    // As a replica's apply worker writes: no trigger fires, the feed hears nothing.
    const client = await t.database.pool.connect();
    try {
      await client.query("SET session_replication_role = replica");
      await client.query("UPDATE inventories SET total = 5 WHERE resource_provider_id = $1", [p.id]);
      await client.query("RESET session_replication_role");
    } finally {
      client.release();
    }
    expect(await capacityVia(t.request)).toBe(4);
    expect(await capacityVia(often)).toBe(5);
  });
});
