/**
 * The flat answer's pass is kept across states of the copy (ViewRead.evolve):
 * requests that resolve to the same ids over an unchanged copy share one
 * pass, each gets a list of its own, and after a change the kept pass is
 * brought up to date from the providers that changed, not made again. The
 * pass made afresh is the oracle: over random changes the kept one must equal
 * it. The view reads a real database; the test counts the passes made.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { Microversion } from "../../src/http/microversion.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";
import { CloudView, type ViewRead } from "../../src/services/candidates/cloud-view.js";
import { flatAnswer } from "../../src/services/candidates/flat-answer.js";
import { createProvider, type Provider } from "../allocations/fixtures.js";
import { consumer } from "../claims/support.js";
import { startHarness, type Harness } from "../support/harness.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

const parse = (q: string) => parseCandidatesQuery([...new URLSearchParams(q).entries()], Microversion.from("1.39"));
const names = { traits: [], aggregates: [] };
const ids = (answer: ReturnType<typeof flatAnswer>) => answer.anchors.map((a) => a.id);

/** The read with its passes counted: made afresh, or brought up to date (undefined updates count as made). */
function counting(read: ViewRead, counts: { made: number; updated: number }): ViewRead {
  return {
    ...read,
    evolve: (key, make, update) =>
      read.evolve(
        key,
        () => {
          counts.made++;
          return make();
        },
        (kept, changed, get) => {
          const value = update(kept, changed, get);
          if (value !== undefined) counts.updated++;
          return value;
        },
      ),
  };
}

/** The same read with nothing kept: every answer from a pass made afresh (the oracle). */
const afresh = (read: ViewRead): ViewRead => ({ ...read, evolve: (_key, make) => make(), memo: (_key, make) => make() });

it("one pass per query and copy state, a list of its own for each caller, brought up to date after a change", async () => {
  const a: Provider = await createProvider(t, { VCPU: { total: 4 } });
  const b: Provider = await createProvider(t, { VCPU: { total: 4 } });
  const view = new CloudView(t.database.db);
  const counts = { made: 0, updated: 0 };
  const answer = (read: ViewRead, q: string) => flatAnswer(counting(read, counts), parse(q), { limit: undefined, randomize: false });

  const [cut, whole, other] = (await view.read(names, (read) => {
    const first = answer(read, "resources=VCPU:2");
    first.anchors.length = 0;
    return [first, answer(read, "resources=VCPU:2"), answer(read, "resources=VCPU:3")];
  }))!;
  // Two queries, two passes; the second caller of the first got the whole list although the first cut its own.
  expect(counts).toEqual({ made: 2, updated: 0 });
  expect(ids(cut)).toEqual([]);
  expect(ids(whole)).toEqual([a.id, b.id]);
  expect(ids(other)).toEqual([a.id, b.id]);

  const who = consumer();
  const put = await t.request("PUT", `/allocations/${who.consumer_uuid}`, {
    body: { allocations: { [a.uuid]: { resources: { VCPU: 4 } } }, project_id: who.project_id, user_id: who.user_id, consumer_generation: null, consumer_type: "INSTANCE" },
  });
  expect(put.status, put.text).toBe(204);
  const after = (await view.read(names, (read) => answer(read, "resources=VCPU:2")))!;
  expect(counts).toEqual({ made: 2, updated: 1 });
  expect(ids(after)).toEqual([b.id]);
});

it("keeps a pass equal to one made afresh over random changes: usage, inventory, traits, new and deleted providers", async () => {
  await t.sql("DELETE FROM allocations");
  await t.sql("DELETE FROM consumers");
  await t.sql("DELETE FROM inventories");
  await t.sql("DELETE FROM resource_provider_traits");
  await t.sql("DELETE FROM resource_providers");
  const providers: Provider[] = [];
  for (let i = 0; i < 40; i++) providers.push(await createProvider(t, { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } }));
  await t.request("PUT", "/traits/CUSTOM_FAST");
  const [{ id: fast }] = await t.sql<{ id: number }>("SELECT id FROM traits WHERE name = 'CUSTOM_FAST'");
  const view = new CloudView(t.database.db);
  const withFast = { traits: ["CUSTOM_FAST"], aggregates: [] };
  const deleted = new Set<number>();
  const queries = ["resources=VCPU:2", "resources=VCPU:4,MEMORY_MB:1024", "resources=VCPU:1&required=CUSTOM_FAST", "resources=VCPU:1&required=!CUSTOM_FAST"];
  // 1 and 10 cut the pass, so a kept one must go on past its cut when a provider it held stops passing.
  const limits = [undefined, 1, 10, 1000];
  const counts = { made: 0, updated: 0 };
  // A fixed sequence: the same changes at every run.
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let round = 0; round < 60; round++) {
    // One to three writes between reads, straight into the tables (the feed's triggers see them as any write).
    for (let w = 1 + random(3); w > 0; w--) {
      const live = providers.filter((p) => !deleted.has(p.id));
      const p = live[random(live.length)];
      switch (random(5)) {
        case 0:
          await t.sql("UPDATE inventories SET used = $2 WHERE resource_provider_id = $1 AND resource_class_id = 0", [p.id, random(9)]);
          break;
        case 1:
          await t.sql("UPDATE inventories SET total = $2 WHERE resource_provider_id = $1 AND resource_class_id = 1", [p.id, 512 * (1 + random(8))]);
          break;
        case 2:
          await t.sql("INSERT INTO resource_provider_traits (resource_provider_id, trait_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", [p.id, fast]);
          break;
        case 3:
          await t.sql("DELETE FROM resource_provider_traits WHERE resource_provider_id = $1", [p.id]);
          break;
        default:
          if (random(2) === 0) {
            await t.sql("DELETE FROM resource_provider_traits WHERE resource_provider_id = $1", [p.id]);
            await t.sql("DELETE FROM inventories WHERE resource_provider_id = $1", [p.id]);
            await t.sql("DELETE FROM resource_providers WHERE id = $1", [p.id]);
            deleted.add(p.id);
          } else providers.push(await createProvider(t, { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } }));
      }
    }
    await view.read(withFast, (read) => {
      for (const q of queries) {
        for (const limit of limits) {
          const kept = flatAnswer(counting(read, counts), parse(q), { limit, randomize: false });
          const oracle = flatAnswer(afresh(read), parse(q), { limit, randomize: false });
          expect(ids(kept), `round ${round}, ${q}, limit ${limit}`).toEqual(ids(oracle));
          expect(kept.anchors.map((x) => x.details)).toEqual(oracle.anchors.map((x) => x.details));
        }
      }
    });
  }
  // Most reads brought a kept pass up to date, those cut at a limit too.
  expect(counts.updated).toBeGreaterThan(3 * counts.made);
});
