/**
 * The answer paths' contract (src/services/candidates/paths/path.ts), as
 * hono's routers share one suite: every case runs through every path alone
 * (an app built with that one path) and through the service's own choice,
 * and every path that takes it must give the same bytes (everyPath). Over
 * randomized flat clouds every path takes every case: the flat view's one
 * pass, the database's flat source, the general plan over the database and
 * over the view's trees. Over randomized clouds with trees and sharing
 * providers the flat paths may decline (only they may), and the general
 * plan, over the database's reads and over the view's trees, answers, with
 * the copy following random changes between cases; there a limited answer
 * must also be the start of the unlimited one, and the entry point for
 * callers with their own transaction (candidatesInPreferenceOrder) must
 * give the GET's candidates in the GET's order.
 *
 * The generator is seeded, and every failure message names the query, so a
 * failure can be replayed.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Microversion } from "../../src/http/microversion.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";
import { candidatesInPreferenceOrder, type CandidatesPath } from "../../src/services/candidates/service.js";
import type { Harness } from "../support/harness.js";
import { custom, everyPath, FLAT_CLOUD_PATHS, startData, type Data, type Provider } from "./data.js";

/** A small seeded generator (mulberry32), so a failing case comes back the same. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]): T => items[int(0, items.length - 1)];
  const some = <T>(items: readonly T[], p: number): T[] => items.filter(() => next() < p);
  return { next, int, pick, some };
}

type Rng = ReturnType<typeof random>;

interface Cloud {
  classes: string[];
  traits: string[];
  aggregates: string[];
  providers: Provider[];
  /** Provider id to its parent's (trees only). */
  parents: Map<number, Provider>;
}

/** Providers with random inventories (units, reserve, ratio), usage, traits and aggregates; with `nested`, trees and sharing. */
async function makeCloud(d: Data, rng: Rng, nested: boolean): Promise<Cloud> {
  const cloud: Cloud = {
    classes: [custom("A"), custom("B"), custom("C")],
    traits: [custom("T1"), custom("T2"), custom("T3")],
    aggregates: [randomUUID(), randomUUID()],
    providers: [],
    parents: new Map(),
  };
  // Every trait exists, whether or not a provider has it (an unknown trait is a 400).
  for (const t of cloud.traits) await d.defineTrait(t);
  const count = rng.int(12, 24);
  for (let i = 0; i < count; i++) {
    const parent = nested && cloud.providers.length > 0 && rng.next() < 0.5 ? rng.pick(cloud.providers) : undefined;
    const inventory: Record<string, { total: number; reserved: number; minUnit: number; maxUnit: number; stepSize: number; ratio: number }> = {};
    for (const rc of rng.some(cloud.classes, 0.6)) {
      const total = rng.int(1, 8);
      inventory[rc] = {
        total,
        reserved: rng.next() < 0.2 ? rng.int(0, total - 1) : 0,
        minUnit: rng.next() < 0.2 ? 2 : 1,
        maxUnit: rng.next() < 0.2 ? Math.max(2, total - 1) : total,
        stepSize: rng.next() < 0.15 ? 2 : 1,
        ratio: rng.pick([1, 1, 1.5, 2]),
      };
    }
    const traits = rng.some(cloud.traits, 0.4);
    if (nested && !parent && rng.next() < 0.15) traits.push("MISC_SHARES_VIA_AGGREGATE");
    const p = await d.provider({ parent, inventory, traits, aggregates: rng.some(cloud.aggregates, 0.4) });
    cloud.providers.push(p);
    if (parent) cloud.parents.set(p.id, parent);
    for (const [rc, inv] of Object.entries(inventory)) if (rng.next() < 0.4) await d.allocate(p, rc, rng.int(1, inv.total));
  }
  return cloud;
}

/**
 * One random change straight in the tables (their triggers note it in the
 * change feed, as the API's writes do): usage, inventory, a trait, an
 * aggregate, a new child, a leaf moved to another tree, a leaf deleted.
 */
async function change(t: Harness, d: Data, cloud: Cloud, rng: Rng): Promise<void> {
  const p = rng.pick(cloud.providers);
  const [inv] = await t.sql<{ rc: string; total: number }>(
    `SELECT rc.name AS rc, i.total FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.resource_provider_id = $1 ORDER BY rc.name LIMIT 1`,
    [p.id],
  );
  const isLeaf = ![...cloud.parents.values()].some((parent) => parent.id === p.id);
  const r = rng.next();
  if (r < 0.3 && inv) await d.allocate(p, inv.rc, rng.int(1, 2));
  else if (r < 0.4 && inv) await t.sql(`UPDATE inventories SET total = GREATEST(reserved, $2) WHERE resource_provider_id = $1`, [p.id, rng.int(1, 8)]);
  else if (r < 0.5) await t.sql(`DELETE FROM resource_provider_traits WHERE resource_provider_id = $1`, [p.id]);
  else if (r < 0.6) {
    await t.sql(
      `INSERT INTO resource_provider_traits (resource_provider_id, trait_id) SELECT $1, id FROM traits WHERE name = $2 ON CONFLICT DO NOTHING`,
      [p.id, rng.pick(cloud.traits)],
    );
  } else if (r < 0.7) {
    // In the aggregate: out of it; else into it.
    const agg = rng.pick(cloud.aggregates);
    const removed = await t.sql(
      `DELETE FROM resource_provider_aggregates WHERE resource_provider_id = $1 AND aggregate_id = (SELECT id FROM aggregates WHERE uuid = $2) RETURNING 1`,
      [p.id, agg],
    );
    if (removed.length === 0) await d.aggregate(p, agg);
  } else if (r < 0.8) {
    const child = await d.provider({ parent: p, inventory: { [rng.pick(cloud.classes)]: { total: rng.int(1, 8) } } });
    cloud.providers.push(child);
    cloud.parents.set(child.id, p);
  } else if (r < 0.9 && cloud.parents.has(p.id) && isLeaf) {
    const parent = rng.pick(cloud.providers.filter((o) => o.id !== p.id && o.rootId !== p.rootId));
    if (!parent) return;
    await t.sql(`UPDATE resource_providers SET parent_provider_id = $2, root_provider_id = $3 WHERE id = $1`, [p.id, parent.id, parent.rootId]);
    cloud.parents.set(p.id, parent);
    p.rootId = parent.rootId;
  } else if (cloud.parents.has(p.id) && isLeaf) {
    await d.remove(p);
    cloud.providers.splice(cloud.providers.indexOf(p), 1);
    cloud.parents.delete(p.id);
  }
}

/** A random query over the cloud's names at a microversion that accepts it. */
function makeQuery(cloud: Cloud, rng: Rng): { query: string; version: string } {
  if (rng.next() < 0.15) {
    // Older microversions: one group of resources, the older response shapes (before and after 1.29, before 1.34).
    const version = rng.pick(["1.10", "1.12", "1.17", "1.26", "1.28", "1.29", "1.33"]);
    const resources = rng.some(cloud.classes, 0.6);
    if (resources.length === 0) resources.push(cloud.classes[0]);
    return { query: `resources=${resources.map((rc) => `${rc}:${rng.int(1, 3)}`).join(",")}`, version };
  }
  const parts: string[] = [];
  // Required, forbidden and any-of traits drawn apart, as Placement refuses a trait both required and forbidden.
  const traitExpr = () => {
    const exprs: string[] = [];
    const [anyOf, ...rest] = cloud.traits;
    for (const t of rng.some(rest, 0.3)) exprs.push(rng.next() < 0.7 ? t : `!${t}`);
    if (rng.next() < 0.2) exprs.push(`in:${anyOf},${rng.pick(cloud.traits.filter((t) => !exprs.includes(`!${t}`)))}`);
    return exprs;
  };
  const group = (suffix: string) => {
    const resources = rng.some(cloud.classes, 0.5);
    if (resources.length === 0) resources.push(rng.pick(cloud.classes));
    parts.push(`resources${suffix}=${resources.map((rc) => `${rc}:${rng.int(1, 3)}`).join(",")}`);
    for (const expr of traitExpr()) parts.push(`required${suffix}=${expr}`);
    if (rng.next() < 0.25) {
      const r = rng.next();
      const agg = rng.pick(cloud.aggregates);
      parts.push(`member_of${suffix}=${r < 0.5 ? agg : r < 0.75 ? `in:${cloud.aggregates.join(",")}` : `!${agg}`}`);
    }
    if (rng.next() < 0.1) parts.push(`in_tree${suffix}=${rng.next() < 0.9 ? rng.pick(cloud.providers).uuid : randomUUID()}`);
  };
  group("");
  const granular = rng.int(0, 2);
  for (let g = 1; g <= granular; g++) group(String(g));
  if (granular > 0) parts.push(`group_policy=${rng.pick(["none", "isolate"])}`);
  if (rng.next() < 0.15) parts.push(`root_required=${rng.next() < 0.5 ? "" : "!"}${rng.pick(cloud.traits)}`);
  if (rng.next() < 0.4) parts.push(`limit=${rng.int(1, 6)}`);
  return { query: parts.join("&"), version: "latest" };
}

/** Four clouds of each kind by default; CANDIDATES_DIFF_SEEDS=N tries N (a longer hunt for drift). */
const SEEDS = Array.from({ length: Number(process.env.CANDIDATES_DIFF_SEEDS ?? 4) }, (_, i) => i + 1);
const QUERIES_PER_CLOUD = 30;

describe("every path over the same random flat clouds and queries", () => {
  let own: { t: Harness; d: Data };
  beforeAll(async () => void (own = await startData()));
  afterAll(async () => own.t.close());

  for (const seed of SEEDS) {
    it(`answers alike, byte for byte (seed ${seed})`, async () => {
      const rng = random(seed);
      const cloud = await makeCloud(own.d, rng, false);
      const get = everyPath(own.t);
      let found = 0;
      for (let i = 0; i < QUERIES_PER_CLOUD; i++) {
        const { query, version } = makeQuery(cloud, rng);
        const res = await get(query, version);
        expect(res.status, query).toBe(200);
        found += res.body.allocation_requests.length;
      }
      // The queries must find something, or the comparison proves little.
      expect(found).toBeGreaterThan(QUERIES_PER_CLOUD / 3);
    });
  }
});

describe("the general plan over random clouds with trees and sharing providers, from the database and from the view", () => {
  let own: { t: Harness; d: Data };
  beforeAll(async () => void (own = await startData()));
  afterAll(async () => own.t.close());

  for (const seed of SEEDS) {
    it(`gives limited answers that start the unlimited ones, and the same candidates in order to callers with their own transaction (seed ${seed})`, async () => {
      const rng = random(100 + seed);
      const cloud = await makeCloud(own.d, rng, true);
      const declined = new Map<CandidatesPath, number>();
      const get = everyPath(own.t, FLAT_CLOUD_PATHS, { mayDecline: ["flat-view", "flat-source"], declined });
      let found = 0;
      for (let i = 0; i < QUERIES_PER_CLOUD; i++) {
        // The view's copy follows each change from the feed; the database's reads see it afresh.
        if (i > 0) for (let k = rng.int(0, 2); k > 0; k--) await change(own.t, own.d, cloud, rng);
        const { query, version } = makeQuery(cloud, rng);
        const unlimited = query.replace(/&limit=\d+/, "");
        const all = await get(unlimited, version);
        expect(all.status, unlimited).toBe(200);
        found += all.body.allocation_requests.length;
        const limit = /&limit=(\d+)/.exec(query);
        if (limit) {
          const some = await get(query, version);
          expect(some.body.allocation_requests, query).toEqual(all.body.allocation_requests.slice(0, Number(limit[1])));
        }
        if (version !== "latest") continue;
        const parsed = parseCandidatesQuery([...new URLSearchParams(unlimited).entries()], Microversion.from("1.39"));
        const inOrder = await own.t.database.db.transaction((tx) => candidatesInPreferenceOrder(tx, parsed));
        const asGet = inOrder.map((c) => {
          const allocations: Record<string, { resources: Record<string, number> }> = {};
          for (const a of c.allocations) (allocations[a.providerUuid] ??= { resources: {} }).resources[a.resourceClass] = a.amount;
          return { allocations, mappings: Object.fromEntries(c.mappings) };
        });
        expect(asGet, unlimited).toEqual(all.body.allocation_requests);
      }
      expect(found).toBeGreaterThan(0);
      // A cloud with trees is not the flat paths' to answer: they must have declined it.
      expect(declined.get("flat-view")).toBeGreaterThan(0);
      expect(declined.get("flat-source")).toBeGreaterThan(0);
    });
  }
});
