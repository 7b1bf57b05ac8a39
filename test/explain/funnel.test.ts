/**
 * GET /allocation_candidates/explain over randomized flat, nested and
 * sharing clouds, each answer checked against independent evaluations:
 * every group filter's `remaining` against GET /resource_providers with the
 * filters so far (each provider on its own, as the funnel counts), the count
 * of allocation requests against GET /allocation_candidates' answer, the
 * tree stages against that answer's trees, and every reason of a near miss
 * against the provider's rows in the tables.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Random } from "../compat/random.js";
import { startData, type Data } from "../candidates/data.js";
import type { Harness } from "../support/harness.js";
import { makeCloud, makeQuery, providersQuery, type CloudKind } from "./clouds.js";

const SEEDS = [1, 2, 3];
const QUERIES_PER_CLOUD = 12;

let t: Harness;
let d: Data;
beforeAll(async () => void ({ t, d } = await startData()));
afterAll(async () => t.close());

describe.each<CloudKind>(["flat", "nested", "sharing"])("explain over random %s clouds", (kind) => {
  for (const seed of SEEDS) {
    it(`agrees with independent evaluations (seed ${seed})`, async () => {
      const rng = new Random(seed * 97 + kind.length);
      const cloud = await makeCloud(d, rng, kind);
      let found = 0;
      let missed = 0;
      for (let i = 0; i < QUERIES_PER_CLOUD; i++) {
        const query = makeQuery(cloud, rng);
        const candidates = await t.request("GET", `/allocation_candidates?${query.replace(/&limit=\d+/, "")}`);
        const explained = await t.request("GET", `/allocation_candidates/explain?${query}`);
        expect(candidates.status, query).toBe(200);
        expect(explained.status, `${query}: ${explained.text}`).toBe(200);
        const e = explained.body;
        expect(e.allocation_requests, query).toBe(candidates.body.allocation_requests.length);
        found += e.allocation_requests;

        for (const group of e.groups) {
          for (const [j, f] of group.filters.entries()) {
            const filters = group.filters.slice(0, j + 1).map((x: { filter: string }) => x.filter);
            const list = await t.request("GET", `/resource_providers?${providersQuery(filters)}`);
            expect(list.status, `${query}: ${filters.join(" ")}: ${list.text}`).toBe(200);
            expect(f.remaining, `${query}: ${filters.join(" ")}`).toBe(list.body.resource_providers.length);
          }
          expect(group.providers, query).toBe(group.filters.at(-1).remaining);
        }

        const stages: number[] = e.trees.map((s: { remaining: number }) => s.remaining);
        expect(stages.length, query).toBeGreaterThan(0);
        for (let s = 1; s < stages.length; s++) expect(stages[s], `${query}: ${JSON.stringify(e.trees)}`).toBeLessThanOrEqual(stages[s - 1]);
        expect(stages.at(-1)! > 0, query).toBe(e.allocation_requests > 0);
        if (kind !== "sharing") expect(stages.at(-1), query).toBe(await treesOf(candidates.body.allocation_requests));

        const used = [...new Set(candidates.body.allocation_requests.flatMap((r: { allocations: object }) => Object.keys(r.allocations)))];
        expect(e.nearest.length, query).toBeLessThanOrEqual(5);
        for (const near of e.nearest) {
          // A tree: its root, none of whose providers serves a candidate.
          const [tree] = await t.sql<{ root: boolean; serving: number }>(
            `SELECT r.root_provider_id = r.id AS root, (SELECT count(*)::int FROM resource_providers m WHERE m.root_provider_id = r.id AND m.uuid = ANY($2)) AS serving
             FROM resource_providers r WHERE r.uuid = $1`,
            [near.uuid, used],
          );
          expect(tree, `${query}: ${near.uuid}`).toEqual({ root: true, serving: 0 });
          expect(near.name, query).toBe(`rp-${near.uuid}`);
          expect(near.short.length, query).toBeGreaterThan(0);
          for (const reason of near.short) await expectTrue(query, near.uuid, reason);
          missed++;
        }
        const shortfalls = e.nearest.map((n: { short: string[] }) => (n.short[0].startsWith("its tree") ? 0 : n.short.length));
        expect(shortfalls, query).toEqual([...shortfalls].sort((a, b) => a - b));
      }
      // The checks prove little unless the queries both find and miss.
      expect(found).toBeGreaterThan(0);
      expect(missed).toBeGreaterThan(0);
    });
  }
});

/** How many trees the candidates' providers belong to (no sharing: each candidate is on one tree). */
async function treesOf(requests: Array<{ allocations: object }>): Promise<number> {
  const uuids = [...new Set(requests.flatMap((r) => Object.keys(r.allocations)))];
  const [row] = await t.sql<{ n: number }>(`SELECT count(DISTINCT root_provider_id)::int AS n FROM resource_providers WHERE uuid = ANY($1)`, [uuids]);
  return row.n;
}

/**
 * Asserts `reason`, a shortfall of the near miss `root` (a tree), is true in
 * the tables (and of the query's amounts) of the provider it names ("on
 * rp-<uuid>", a provider of that tree) or else of the root.
 */
async function expectTrue(query: string, root: string, reason: string): Promise<void> {
  const what = `${query}: ${root}: ${reason}`;
  const where = /^(?:unsuffixed group|group \S+)?(?: ?on rp-(\S+))?: (.*)$/.exec(reason);
  const uuid = where?.[1] ?? root;
  const bare = where && (where[1] || reason.includes("group")) ? where[2] : reason;
  const [p] = await t.sql<{ id: number; root: number }>(
    `SELECT m.id, m.root_provider_id AS root FROM resource_providers m JOIN resource_providers r ON r.id = m.root_provider_id WHERE m.uuid = $1 AND r.uuid = $2`,
    [uuid, root],
  );
  expect(p, `${what}: not a provider of the tree`).toBeDefined();
  const traits = new Set(
    (await t.sql<{ name: string }>(`SELECT t.name FROM resource_provider_traits m JOIN traits t ON t.id = m.trait_id WHERE m.resource_provider_id = $1`, [p.id])).map((r) => r.name),
  );
  const aggregates = new Set(
    (await t.sql<{ uuid: string }>(`SELECT a.uuid FROM resource_provider_aggregates m JOIN aggregates a ON a.id = m.aggregate_id WHERE m.resource_provider_id = $1`, [p.id])).map((r) => r.uuid),
  );
  let m: RegExpExecArray | null;
  if ((m = /^(\S+): (\d+) asked, (.*)$/.exec(bare))) {
    const [, rc, askedText, rest] = m;
    const asked = Number(askedText);
    expect(query, what).toMatch(new RegExp(`${rc}:${asked}(,|&|$)`));
    const [inv] = await t.sql<{ total: number; reserved: number; ratio: number; min: number; max: number; step: number; used: number }>(
      `SELECT i.total, i.reserved, i.allocation_ratio AS ratio, i.min_unit AS min, i.max_unit AS max, i.step_size AS step,
              (SELECT coalesce(sum(a.used), 0)::int FROM allocations a WHERE a.resource_provider_id = i.resource_provider_id AND a.resource_class_id = i.resource_class_id) AS used
       FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.resource_provider_id = $1 AND rc.name = $2`,
      [p.id, rc],
    );
    if (rest === "no inventory") return expect(inv, what).toBeUndefined();
    expect(inv, what).toBeDefined();
    const capacity = Math.floor((inv.total - inv.reserved) * inv.ratio);
    if ((m = /^(-?\d+) free of (\d+)$/.exec(rest))) {
      expect(Number(m[2]), what).toBe(capacity);
      expect(Number(m[1]), what).toBe(capacity - inv.used);
      return expect(inv.used + asked, what).toBeGreaterThan(capacity);
    }
    if ((m = /^min_unit (\d+)$/.exec(rest))) return expect([Number(m[1]), asked < inv.min], what).toEqual([inv.min, true]);
    if ((m = /^max_unit (\d+)$/.exec(rest))) return expect([Number(m[1]), asked > inv.max], what).toEqual([inv.max, true]);
    if ((m = /^not a multiple of step_size (\d+)$/.exec(rest))) return expect([Number(m[1]), asked % inv.step !== 0], what).toEqual([inv.step, true]);
    throw new Error(`unexpected reason: ${what}`);
  }
  if ((m = /^lacks trait (\S+)$/.exec(bare))) return expect(traits.has(m[1]), what).toBe(false);
  if ((m = /^has forbidden trait (\S+)$/.exec(bare))) return expect(traits.has(m[1]), what).toBe(true);
  if ((m = /^lacks every trait of (.+)$/.exec(bare))) return expect(m[1].split(", ").some((x) => traits.has(x)), what).toBe(false);
  if ((m = /^not in aggregate (\S+)$/.exec(bare))) return expect(aggregates.has(m[1]), what).toBe(false);
  if ((m = /^in none of aggregates (.+)$/.exec(bare))) return expect(m[1].split(", ").some((x) => aggregates.has(x)), what).toBe(false);
  if ((m = /^in forbidden aggregate (\S+)$/.exec(bare))) return expect(aggregates.has(m[1]), what).toBe(true);
  if ((m = /^not in the tree of (\S+)$/.exec(bare))) {
    const [other] = await t.sql<{ root: number }>(`SELECT root_provider_id AS root FROM resource_providers WHERE uuid = $1`, [m[1]]);
    return expect(other?.root, what).not.toBe(p.root);
  }
  if (/^its tree anchors no candidate once .+$/.test(bare)) return;
  throw new Error(`unexpected reason: ${what}`);
}
