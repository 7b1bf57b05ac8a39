/**
 * Clouds with trees and sharing providers are answered by the general plan
 * over the trees of the cloud view's copy (cloud-view.ts, cloud-trees.ts,
 * view-tree-reads.ts). These tests show that the service takes that path on
 * such a cloud, that the copy follows changes of a tree's shape made
 * through the API (a subtree moved, a child deleted, a sharing provider
 * joining an aggregate) as the database's reads see them, and that an answer
 * read over several batches, while writes change the copy, is the answer of
 * one state.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Microversion } from "../../src/http/microversion.js";
import { parseCandidatesQuery } from "../../src/query/request-groups.js";
import { answerShape } from "../../src/services/candidates/answer-shape.js";
import { CandidatesService, type CandidatesSink } from "../../src/services/candidates/service.js";
import type { Harness } from "../support/harness.js";
import { custom, everyPath, startData, TREE_CLOUD_PATHS, type Data, type Provider } from "./data.js";

let t: Harness;
let d: Data;
beforeAll(async () => void ({ t, d } = await startData()));
afterAll(async () => t.close());

/** A sink that only counts, for calling the service without HTTP. */
function countingSink(): CandidatesSink & { count: number } {
  const sink = {
    count: 0,
    candidate: () => void sink.count++,
    end: () => undefined,
    flat: (answer: { anchors: unknown[] }) => void (sink.count += answer.anchors.length),
    discard: () => true,
  };
  return sink;
}

const parse = (q: string) => parseCandidatesQuery([...new URLSearchParams(q).entries()], Microversion.from("1.39"));

describe("the tree view", () => {
  it("answers a cloud with trees from the view's trees, and a request with an unknown name from the database", async () => {
    const service = new CandidatesService(t.database.db, t.config);
    const VF = custom("VF");
    const root = await d.provider();
    await d.provider({ parent: root, inventory: { [VF]: 4 } });
    const sink = countingSink();
    expect(await service.answer(parse(`resources=${VF}:1`), answerShape(Microversion.from("1.39")), sink)).toBe("tree-view");
    expect(sink.count).toBe(1);
    // A trait nobody defined: Placement's 400 comes from the engine's reads.
    await expect(service.answer(parse(`resources=${VF}:1&required=${custom("NOPE")}`), answerShape(Microversion.from("1.39")), countingSink())).rejects.toThrow(/no such trait/);
  });

  it("follows a subtree moved to another tree, a child deleted and a sharing provider joining an aggregate, all through the API", async () => {
    const [VF, DISK] = [custom("VF"), custom("DISK")];
    const agg = randomUUID();
    const api = (method: string, path: string, body?: unknown) => t.request(method, path, { body, version: "1.39" });
    const create = async (name: string, parent?: string) => {
      const res = await api("POST", "/resource_providers", { name: `${name}-${randomUUID()}`, parent_provider_uuid: parent });
      expect(res.status).toBe(200);
      return res.body.uuid as string;
    };
    const inventory = async (uuid: string, rc: string, total: number) => {
      const rp = await api("GET", `/resource_providers/${uuid}`);
      const res = await api("PUT", `/resource_providers/${uuid}/inventories`, { resource_provider_generation: rp.body.generation, inventories: { [rc]: { total } } });
      expect(res.status).toBe(200);
    };
    await api("PUT", `/resource_classes/${VF}`);
    await api("PUT", `/resource_classes/${DISK}`);
    const [a, b] = [await create("a"), await create("b")];
    const numa = await create("numa", a);
    const pf = await create("pf", numa);
    await inventory(pf, VF, 8);
    const walk = everyPath(t, TREE_CLOUD_PATHS);
    // The default path (the view) must answer as the forced ones.
    const both = async (q: string) => {
      const forced = await walk(q);
      const own = await api("GET", `/allocation_candidates?${q}`);
      expect(own.text, q).toBe(forced.text);
      return forced.body;
    };
    expect(Object.values((await both(`resources=${VF}:1`)).provider_summaries).map((s: any) => s.root_provider_uuid)).toEqual([a, a, a]);

    // The NUMA node and its PF move under b: both are b's tree now.
    const moved = await api("PUT", `/resource_providers/${numa}`, { name: `numa-${randomUUID()}`, parent_provider_uuid: b });
    expect(moved.status).toBe(200);
    const after = await both(`resources=${VF}:1`);
    expect(after.provider_summaries[pf]).toMatchObject({ root_provider_uuid: b });
    expect(Object.keys(after.provider_summaries).sort()).toEqual([b, numa, pf].sort());

    // Storage shared with b through an aggregate serves b's tree.
    const ss = await create("ss");
    await inventory(ss, DISK, 100);
    const ssRp = await api("GET", `/resource_providers/${ss}`);
    expect((await api("PUT", `/resource_providers/${ss}/traits`, { resource_provider_generation: ssRp.body.generation, traits: ["MISC_SHARES_VIA_AGGREGATE"] })).status).toBe(200);
    expect((await both(`resources=${VF}:1,${DISK}:10`)).allocation_requests).toHaveLength(0);
    for (const uuid of [ss, b]) {
      const rp = await api("GET", `/resource_providers/${uuid}`);
      expect((await api("PUT", `/resource_providers/${uuid}/aggregates`, { resource_provider_generation: rp.body.generation, aggregates: [agg] })).status).toBe(200);
    }
    expect((await both(`resources=${VF}:1,${DISK}:10`)).allocation_requests).toHaveLength(1);

    // The PF goes: nothing has VF any more.
    expect((await api("DELETE", `/resource_providers/${pf}`)).status).toBe(204);
    expect((await both(`resources=${VF}:1`)).allocation_requests).toHaveLength(0);
    expect(Object.keys((await both(`resources=${DISK}:10`)).provider_summaries)).toEqual([ss]);
  });

  it("answers each request from one state of the copy while writes move it on between the request's batches", async () => {
    const VF = custom("VF");
    // Enough trees for several batches: the first and the last tree are read in different ones.
    const children: Provider[] = [];
    for (let i = 0; i < 600; i++) {
      const root = await d.provider();
      children.push(await d.provider({ parent: root, inventory: { [VF]: 1000 } }));
    }
    const [first, last] = [children[0], children[children.length - 1]];
    const [firstUuid, lastUuid] = [first.uuid, last.uuid];
    const project = randomUUID();
    let writing = true;
    let writes = 0;
    // Each write takes one VF from the first and one from the last tree, in one transaction.
    const writer = (async () => {
      while (writing) {
        const res = await t.request("PUT", `/allocations/${randomUUID()}`, {
          body: {
            allocations: { [firstUuid]: { resources: { [VF]: 1 } }, [lastUuid]: { resources: { [VF]: 1 } } },
            project_id: project,
            user_id: project,
            consumer_generation: null,
            consumer_type: "INSTANCE",
          },
        });
        expect(res.status, res.text).toBe(204);
        writes++;
      }
    })();
    const seen = new Set<number>();
    const reader = async () => {
      for (let i = 0; i < 12; i++) {
        const res = await t.request("GET", `/allocation_candidates?resources=${VF}:1`);
        expect(res.status).toBe(200);
        const used = (uuid: string) => res.body.provider_summaries[uuid].resources[VF].used as number;
        // Read in the first batch and the last: one state shows both writes' halves alike.
        expect(used(lastUuid)).toBe(used(firstUuid));
        seen.add(used(firstUuid));
      }
    };
    await Promise.all([reader(), reader()]);
    writing = false;
    await writer;
    expect(writes).toBeGreaterThan(0);
    // The answers saw the copy move on, or the check above proved nothing.
    expect(seen.size).toBeGreaterThan(2);
    // And the tables hold every write on both trees, each once.
    const usage = await t.sql<{ used: number }>(`SELECT used FROM inventories WHERE resource_provider_id = ANY($1::int[]) ORDER BY resource_provider_id`, [[first.id, last.id]]);
    expect(usage.map((u) => u.used)).toEqual([writes, writes]);
    for (const used of seen) expect(used).toBeLessThanOrEqual(writes);
  });
});
