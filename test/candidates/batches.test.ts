/**
 * The general engine under a limit walks root providers in id order, batch by
 * batch, reading each batch's trees whole plus the sharing providers' trees.
 * These trees make the first batches come up empty, so several are needed,
 * and a sharing provider created before all of them must still serve the late ones.
 * Without a limit the batches are fixed in size, and a sharing provider that
 * is a root of a later batch is read once, with the first batch, not again with its own;
 * their trees are read ahead, several batches asked for at once and sent one
 * after another. Under a limit each batch reads where the sharing providers
 * anchor into its own trees only, and answers as the reads of every anchor do.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness } from "../support/harness.js";
import { custom, everyPath, startData, TREE_CLOUD_PATHS, type Data, type Provider } from "./data.js";

let t: Harness;
let d: Data;
beforeAll(async () => void ({ t, d } = await startData()));
afterAll(async () => t.close());

describe("batches of trees", () => {
  it("finds the first trees with room, in id order, across batches, with storage shared from before them", async () => {
    const [VF, DISK] = [custom("VF"), custom("DISK")];
    const agg = randomUUID();
    const shared = await d.provider({ inventory: { [DISK]: 1000 }, traits: ["MISC_SHARES_VIA_AGGREGATE"], aggregates: [agg] });
    const roots: Provider[] = [];
    const children: Provider[] = [];
    for (let i = 0; i < 90; i++) {
      const root = await d.provider({ aggregates: [agg] });
      roots.push(root);
      children.push(await d.provider({ parent: root, inventory: { [VF]: 1 } }));
    }
    // The first 80 trees are full.
    for (const child of children.slice(0, 80)) await d.allocate(child, VF, 1);

    const res = await t.request("GET", `/allocation_candidates?resources=${VF}:1,${DISK}:10&limit=5`);
    expect(res.status).toBe(200);
    const picked = res.body.allocation_requests.map((a: any) => {
      const providers = Object.keys(a.allocations);
      expect(providers).toContain(shared.uuid);
      return providers.find((p) => p !== shared.uuid);
    });
    expect(picked).toEqual(children.slice(80, 85).map((c) => c.uuid));

    // Without a limit every tree with room is found.
    const all = await t.request("GET", `/allocation_candidates?resources=${VF}:1,${DISK}:10`);
    expect(all.body.allocation_requests).toHaveLength(10);
  });

  it("without a limit, finds every tree across fixed batches once, with a sharing root that falls in a later batch read once", async () => {
    const [VF, DISK] = [custom("VF"), custom("DISK")];
    const agg = randomUUID();
    const children: Provider[] = [];
    // More trees than one unlimited batch holds, so the sharing provider made after them is a root of the second.
    for (let i = 0; i < 260; i++) {
      const root = await d.provider({ aggregates: [agg] });
      children.push(await d.provider({ parent: root, inventory: { [VF]: 1 } }));
    }
    const shared = await d.provider({ inventory: { [DISK]: 1000 }, traits: ["MISC_SHARES_VIA_AGGREGATE"], aggregates: [agg] });

    const res = await t.request("GET", `/allocation_candidates?resources=${VF}:1,${DISK}:10`);
    expect(res.status).toBe(200);
    const picked = res.body.allocation_requests.map((a: any) => {
      expect(a.allocations[shared.uuid]).toEqual({ resources: { [DISK]: 10 } });
      return Object.keys(a.allocations).find((p) => p !== shared.uuid);
    });
    expect(picked).toEqual(children.map((c) => c.uuid));
    expect(res.body.provider_summaries[shared.uuid].resources[DISK]).toEqual({ capacity: 1000, used: 0 });
  });

  it("without a limit, finds every tree with room exactly once, in order, over batches read ahead", async () => {
    const [VF, MEM] = [custom("VF"), custom("MEM")];
    const withRoom: Provider[] = [];
    // Enough trees for several batches in flight, every third one full.
    for (let i = 0; i < 800; i++) {
      const root = await d.provider({ inventory: { [MEM]: 100 + i } });
      const child = await d.provider({ parent: root, inventory: { [VF]: 1 } });
      if (i % 3 === 0) await d.allocate(child, VF, 1);
      else withRoom.push(child);
    }

    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on("warning", onWarning);
    const res = await t.request("GET", `/allocation_candidates?resources=${MEM}:1&resources1=${VF}:1`);
    process.off("warning", onWarning);
    expect(res.status).toBe(200);
    // The loads read ahead go one at a time on the transaction's connection (pg deprecates queueing on a busy client).
    expect(warnings.filter((w) => w.includes("already executing a query"))).toEqual([]);
    const picked = res.body.allocation_requests.map((a: any) => a.mappings["1"][0]);
    expect(picked).toEqual(withRoom.map((c) => c.uuid));
    expect(new Set(res.body.allocation_requests.map((a: any) => a.mappings[""][0])).size).toBe(withRoom.length);
  });
});

describe("batches of trees under a limit, in a database of their own", () => {
  // Its own data: the trees of the tests above, before these in id order, would make the first batches large.
  let own: { t: Harness; d: Data };
  beforeAll(async () => void (own = await startData()));
  afterAll(async () => own.t.close());

  it("under a limit, reads each batch's anchors of sharing providers made before and after its trees, and of one into another's tree", async () => {
    const [VF, DISK] = [custom("VF"), custom("DISK")];
    const [agg, other] = [randomUUID(), randomUUID()];
    // A sharing provider whose own tree is an anchor (its child has VF) and into which the one made last also anchors.
    const first = await own.d.provider({ inventory: { [DISK]: 1000 }, traits: ["MISC_SHARES_VIA_AGGREGATE"], aggregates: [agg] });
    const firstChild = await own.d.provider({ parent: first, inventory: { [VF]: 1 } });
    for (let i = 0; i < 150; i++) {
      // Every third tree in another aggregate, which only the sharing provider made last is in.
      const root = await own.d.provider({ aggregates: [i % 3 === 0 ? other : agg] });
      await own.d.provider({ parent: root, inventory: { [VF]: 1 } });
    }
    const last = await own.d.provider({ inventory: { [DISK]: 1000 }, traits: ["MISC_SHARES_VIA_AGGREGATE"], aggregates: [agg, other] });

    const get = everyPath(own.t, TREE_CLOUD_PATHS);
    const all = await get(`resources=${VF}:1,${DISK}:10`);
    expect(all.status).toBe(200);
    // The first sharing provider's tree: its own DISK or the last one's; 100 trees in `agg`: either; 50 in `other`: the last's.
    expect(all.body.allocation_requests).toHaveLength(2 + 100 * 2 + 50);
    const inFirst = all.body.allocation_requests.filter((a: any) => a.allocations[firstChild.uuid]);
    expect(inFirst.map((a: any) => Object.keys(a.allocations).find((p) => p !== firstChild.uuid))).toEqual([first.uuid, last.uuid]);
    for (const limit of [1, 2, 40, 101, 251, 252, 300]) {
      const some = await get(`resources=${VF}:1,${DISK}:10&limit=${limit}`);
      expect(some.body.allocation_requests, `limit=${limit}`).toEqual(all.body.allocation_requests.slice(0, limit));
    }
  });
});
