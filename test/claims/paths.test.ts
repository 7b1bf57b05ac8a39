/**
 * POST /claims answers its candidates through the candidates service's
 * paths into a collecting sink. The flat view hands that sink a whole flat
 * answer, which the sink turns into candidates itself; the tree view and the
 * database's paths hand it candidates and provider summaries. The database's
 * paths are the oracle: over the same cloud, a claim through each must
 * choose the same allocation and offer the same alternates, with the same
 * mappings, for every pick that does not draw at random.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { createProvider, type Provider } from "../allocations/fixtures.js";
import { DATABASE_PATHS } from "../../src/services/candidates/paths/chooser.js";
import { flatViewPath } from "../../src/services/candidates/paths/flat-view.js";
import type { AnswerPath } from "../../src/services/candidates/paths/path.js";
import { treeViewPath } from "../../src/services/candidates/paths/tree-view.js";
import { brokenInvariants, claimBody, consumer } from "./support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => {
  await t?.close();
});

async function emptyCloud() {
  for (const table of ["allocations", "consumers", "inventories", "resource_provider_traits", "resource_provider_aggregates", "resource_providers"]) {
    await t.sql(`DELETE FROM ${table}`);
  }
}

async function allocate(node: Provider, resources: Record<string, number>) {
  const res = await t.request("PUT", `/allocations/${newUuid()}`, {
    body: { allocations: { [node.uuid]: { resources } }, project_id: "p", user_id: "u", consumer_generation: null, consumer_type: "INSTANCE" },
  });
  expect(res.status).toBe(204);
}

/** A claim of `query` through `path` alone and through the database's paths, for each pick: the same choice and alternates. */
async function claimsAlike(path: AnswerPath, query: string) {
  const viaPath = t.requestVia({ paths: [path] });
  const viaDatabase = t.requestVia({ paths: DATABASE_PATHS });
  for (const pick of ["pack", "spread", "first"]) {
    const answers = [];
    for (const via of [viaPath, viaDatabase]) {
      const who = consumer();
      const res = await via("POST", `/claims?${query}`, { body: claimBody({ pick, alternates: 10 }, [who]), version: "1.39" });
      expect(res.status).toBe(200);
      const [claimed] = res.body.claims;
      // Generations move with every claim; what was chosen and what was offered must not.
      answers.push({
        chosen: Object.fromEntries(Object.entries(claimed.allocations).map(([rp, a]: [string, any]) => [rp, a.resources])),
        alternates: res.body.alternates,
      });
      // Back to the same cloud for the other path.
      expect((await t.request("DELETE", `/allocations/${who.consumer_uuid}`)).status).toBe(204);
    }
    expect(answers[0].alternates.length).toBeGreaterThan(0);
    expect(answers[0]).toEqual(answers[1]);
  }
  expect(await brokenInvariants(t)).toEqual([]);
}

describe("POST /claims through the flat view and through the database", () => {
  beforeAll(async () => {
    await emptyCloud();
    const nodes: Provider[] = [];
    // Uneven usage, so pack and spread order the nodes differently from their ids.
    for (let i = 0; i < 6; i++) nodes.push(await createProvider(t, { VCPU: { total: 8 }, MEMORY_MB: { total: 8192 }, DISK_GB: { total: 100, step_size: 10 } }));
    for (const [node, vcpu] of [[nodes[1], 6], [nodes[2], 3], [nodes[4], 7], [nodes[5], 1]] as const) await allocate(node, { VCPU: vcpu });
  });

  it.each([
    "resources=VCPU:1,MEMORY_MB:512",
    "resources=VCPU:2,DISK_GB:20&limit=3",
    // Two groups asking for one class on the one provider: the sink sums them, and maps each suffix.
    "resources1=VCPU:1&resources2=VCPU:1,MEMORY_MB:256&group_policy=none",
    "resources=VCPU:1&resources_A=VCPU:1,DISK_GB:10&group_policy=none",
  ])("choose alike: %s", (query) => claimsAlike(flatViewPath, query));
});

describe("POST /claims through the tree view and through the database", () => {
  beforeAll(async () => {
    await emptyCloud();
    // Compute nodes with their disk at the root and two NUMA nodes below, unevenly used.
    for (let i = 0; i < 4; i++) {
      const root = await createProvider(t, { DISK_GB: { total: 100 } });
      for (let n = 0; n < 2; n++) {
        const numa = await createProvider(t, { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } });
        await t.sql("UPDATE resource_providers SET parent_provider_id = $1, root_provider_id = $1 WHERE id = $2", [root.id, numa.id]);
        if ((i + n) % 3 === 0) await allocate(numa, { VCPU: i + 1 });
      }
    }
  });

  it.each([
    // One candidate spanning a tree: the root's disk, a NUMA node's CPU and memory.
    "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10",
    "resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate",
    "resources=DISK_GB:5&resources1=VCPU:2,MEMORY_MB:1024&group_policy=none",
  ])("choose alike: %s", (query) => claimsAlike(treeViewPath(), query));
});
