/**
 * Concurrent reads of one cloud view share its delta reads (cloud-view.ts's
 * header): requests arriving while one is in flight wait for the next one and
 * share it. The view's pool is instrumented, not replaced: every statement
 * runs on PostgreSQL, and the test counts the view's delta statements and
 * holds the first one's answer back while it commits a change and sends more
 * requests, which must see that change (a request that shared the read in
 * flight would not).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import type pg from "pg";
import { openDatabase, poolOf, type Database } from "../../src/db/database.js";
import { createLogger } from "../../src/log.js";
import { CloudView, type ViewRead } from "../../src/services/candidates/cloud-view.js";
import type { Harness } from "../support/harness.js";
import { custom, startData, type Data } from "./data.js";

let t: Harness;
let d: Data;
let database: Database;
let state: ReturnType<typeof instrument>;
beforeAll(async () => {
  ({ t, d } = await startData());
  database = openDatabase(t.url, 8, createLogger("silent"));
  state = instrument(poolOf(database.db));
});
afterAll(async () => {
  await database.close();
  await t.close();
});

/**
 * Counts the delta and full statements the pool's clients run, and holds each
 * delta's answer (each full one's too with `holdFull`) until `hold` resolves.
 */
function instrument(pool: pg.Pool) {
  const state = { deltas: 0, fulls: 0, holdFull: false, hold: Promise.resolve(), answered: [] as (() => void)[] };
  const wrapped = new WeakSet<pg.PoolClient>();
  const connect = pool.connect.bind(pool) as () => Promise<pg.PoolClient>;
  (pool as { connect: () => Promise<pg.PoolClient> }).connect = async () => {
    const client = await connect();
    if (!wrapped.has(client)) {
      wrapped.add(client);
      const query = client.query.bind(client) as (config: unknown, values?: unknown) => Promise<unknown>;
      (client as { query: unknown }).query = async (config: unknown, values?: unknown) => {
        const text = typeof config === "string" ? config : (config as { text?: string }).text;
        const full = text?.includes("named:ac_view_full") ?? false;
        if (full) state.fulls++;
        if (!text?.includes("named:ac_view_delta") && !(full && state.holdFull)) return query(config, values);
        if (!full) state.deltas++;
        const result = await query(config, values);
        for (const answered of state.answered.splice(0)) answered();
        await state.hold;
        return result;
      };
    }
    return client;
  };
  return state;
}

it("shares one delta read among requests arriving while one is in flight, and shows them a commit made before they arrived", async () => {
  const CPU = custom("CPU");
  const p = await d.provider({ inventory: { [CPU]: 4 } });
  const view = new CloudView(database.db);
  state.deltas = 0;
  const capacity = (read: ViewRead) => read.byUuid.get(p.uuid)?.inventories[0].capacity;
  const read = () => view.read({ traits: [], aggregates: [] }, capacity);

  // The first read is a full one (no copy yet); then one delta read alone.
  expect(await read()).toBe(4);
  expect(await read()).toBe(4);
  expect(state.deltas).toBe(1);

  // A delta read whose answer came back but is held: its snapshot predates the commit below.
  let release = () => {};
  state.hold = new Promise<void>((resolve) => void (release = resolve));
  const answered = new Promise<void>((resolve) => state.answered.push(resolve));
  const first = read();
  await answered;
  expect(state.deltas).toBe(2);
  await t.sql(`UPDATE inventories SET total = 9 WHERE resource_provider_id = $1`, [p.id]);

  // Arrived after the commit, while that read is in flight: they must see 9, from one read of their own.
  const later = [read(), read(), read(), read()];
  release();
  expect(await first).toBe(4);
  expect(await Promise.all(later)).toEqual([9, 9, 9, 9]);
  expect(state.deltas).toBe(3);

  // Reads for other names are not shared with these.
  state.hold = new Promise<void>((resolve) => void (release = resolve));
  const held = new Promise<void>((resolve) => state.answered.push(resolve));
  const one = read();
  await held;
  // Its statement runs while the first is held (a request waiting for the held read would never get here).
  const otherAnswered = new Promise<void>((resolve) => state.answered.push(resolve));
  const other = view.read({ traits: [], aggregates: [randomUUID()] }, capacity);
  await otherAnswered;
  expect(state.deltas).toBe(5);
  release();
  expect(await Promise.all([one, other])).toEqual([9, 9]);
});

it("sends each request that shared a delta read on to a full read when the feed cannot say what changed", async () => {
  const CPU = custom("CPU");
  const p = await d.provider({ inventory: { [CPU]: 4 } });
  const q = await d.provider({ inventory: { [CPU]: 4 } });
  const view = new CloudView(database.db);
  state.deltas = 0;
  const capacities = (read: ViewRead) => [p, q].map((r) => read.byUuid.get(r.uuid)?.inventories[0].capacity);
  const read = () => view.read({ traits: [], aggregates: [] }, capacities);
  expect(await read()).toEqual([4, 4]);

  let release = () => {};
  state.hold = new Promise<void>((resolve) => void (release = resolve));
  const answered = new Promise<void>((resolve) => state.answered.push(resolve));
  const first = read();
  await answered;
  await t.sql(`UPDATE provider_changes_horizon SET retention = 1, prune_every = 1`);
  try {
    // p's change gets the next seq; each later transaction prunes every row but the newest.
    await t.sql(`UPDATE inventories SET total = 6 WHERE resource_provider_id = $1`, [p.id]);
    await t.sql(`UPDATE inventories SET total = 5 WHERE resource_provider_id = $1`, [q.id]);
    await t.sql(`UPDATE inventories SET total = 3 WHERE resource_provider_id = $1`, [q.id]);
    const later = [read(), read(), read()];
    release();
    expect(await first).toEqual([4, 4]);
    expect(await Promise.all(later)).toEqual([
      [6, 3],
      [6, 3],
      [6, 3],
    ]);
    expect(await read()).toEqual([6, 3]);
  } finally {
    await t.sql(`UPDATE provider_changes_horizon SET retention = 100000, prune_every = 1000`);
  }
});

it("runs one full read at a time: requests with no copy wait for the one in flight, then see what was committed before they arrived", async () => {
  const CPU = custom("CPU");
  const p = await d.provider({ inventory: { [CPU]: 4 } });
  const view = new CloudView(database.db);
  state.fulls = 0;
  const capacity = (read: ViewRead) => read.byUuid.get(p.uuid)?.inventories[0].capacity;
  const read = () => view.read({ traits: [], aggregates: [] }, capacity);

  // Eight requests at once on an empty view: one full read among them.
  expect(await Promise.all(Array.from({ length: 8 }, read))).toEqual(Array(8).fill(4));
  expect(state.fulls).toBe(1);

  // A full read whose answer came back but is held (the feed says nothing since, so a fresh view reads whole).
  const fresh = new CloudView(database.db);
  const readFresh = () => fresh.read({ traits: [], aggregates: [] }, capacity);
  let release = () => {};
  state.holdFull = true;
  state.hold = new Promise<void>((resolve) => void (release = resolve));
  try {
    const answered = new Promise<void>((resolve) => state.answered.push(resolve));
    const first = readFresh();
    await answered;
    await t.sql(`UPDATE inventories SET total = 9 WHERE resource_provider_id = $1`, [p.id]);
    // Arrived after the commit, while that full read is in flight: they wait for it and must still see 9.
    const later = [readFresh(), readFresh(), readFresh()];
    release();
    expect(await first).toBe(4);
    expect(await Promise.all(later)).toEqual([9, 9, 9]);
    expect(state.fulls).toBe(2);
  } finally {
    state.holdFull = false;
    state.hold = Promise.resolve();
  }
});
