/**
 * Concurrent writers on one provider, over real parallel connections: the
 * generation lets exactly one of them win, and the tables show it.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";
import { generationOf, makeProvider } from "./support.js";
import { createProviderIn } from "../../src/services/providers.js";
import { DuplicateProvider } from "../../src/services/errors.js";
import { placementErrorFor } from "../../src/http/error-table.js";

let t: Harness;
beforeAll(async () => {
  // Enough connections for real parallelism, few enough to leave room for other test files on the same server.
  t = await startHarness({ poolSize: 24 });
});
afterAll(async () => t.close());

const WRITERS = 32;

function tally(statuses: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of statuses) out[s] = (out[s] ?? 0) + 1;
  return out;
}

describe("concurrent writers on one provider", () => {
  it("32 inventory PUTs from the same generation: one succeeds, the rest get 409, the generation moves by one", async () => {
    const uuid = await makeProvider(t);
    const results = await Promise.all(
      Array.from({ length: WRITERS }, (_, i) =>
        t.request("PUT", `/resource_providers/${uuid}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { VCPU: { total: i + 1 } } },
        }),
      ),
    );
    expect(tally(results.map((r) => r.status))).toEqual({ 200: 1, 409: WRITERS - 1 });
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.errors[0].code).toBe("placement.concurrent_update");
    expect(await generationOf(t, uuid)).toBe(1);
    // The stored inventory is the winner's, and only one row exists.
    const winner = results.find((r) => r.status === 200)!;
    const rows = await t.sql<{ total: number }>(
      "SELECT i.total FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id WHERE rp.uuid = $1",
      [uuid],
    );
    expect(rows).toEqual([{ total: winner.body.inventories.VCPU.total }]);
  });

  it("32 single-class PUTs from the same generation: exactly one wins", async () => {
    const uuid = await makeProvider(t);
    await t.request("PUT", `/resource_providers/${uuid}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { DISK_GB: { total: 1 } } },
    });
    const results = await Promise.all(
      Array.from({ length: WRITERS }, (_, i) =>
        t.request("PUT", `/resource_providers/${uuid}/inventories/DISK_GB`, { body: { resource_provider_generation: 1, total: i + 10 } }),
      ),
    );
    expect(tally(results.map((r) => r.status))).toEqual({ 200: 1, 409: WRITERS - 1 });
    expect(await generationOf(t, uuid)).toBe(2);
  });

  it("aggregate PUTs racing inventory PUTs from the same generation: one write in total wins", async () => {
    const uuid = await makeProvider(t);
    const results = await Promise.all(
      Array.from({ length: WRITERS }, (_, i) =>
        i % 2 === 0
          ? t.request("PUT", `/resource_providers/${uuid}/aggregates`, { body: { aggregates: [randomUUID()], resource_provider_generation: 0 } })
          : t.request("PUT", `/resource_providers/${uuid}/inventories`, { body: { resource_provider_generation: 0, inventories: { VCPU: { total: i } } } }),
      ),
    );
    expect(tally(results.map((r) => r.status))).toEqual({ 200: 1, 409: WRITERS - 1 });
    expect(await generationOf(t, uuid)).toBe(1);
  });

  it("POSTs of different classes without a generation all land, each bumping the generation once", async () => {
    const uuid = await makeProvider(t);
    const classes = ["VCPU", "MEMORY_MB", "DISK_GB", "PCI_DEVICE", "SRIOV_NET_VF", "IPV4_ADDRESS", "VGPU", "PCPU"];
    const results = await Promise.all(
      classes.map((rc) => t.request("POST", `/resource_providers/${uuid}/inventories`, { body: { resource_class: rc, total: 4 } })),
    );
    expect(results.map((r) => r.status)).toEqual(classes.map(() => 201));
    expect(await generationOf(t, uuid)).toBe(classes.length);
    expect(results.map((r) => r.body.resource_provider_generation).sort((a, b) => a - b)).toEqual(classes.map((_, i) => i + 1));
  });

  it("parallel creates of one name: one provider, every other request a 409 duplicate (no 500 from the unique index)", async () => {
    const name = `same-${randomUUID()}`;
    const results = await Promise.all(
      Array.from({ length: 16 }, () => t.request("POST", "/resource_providers", { body: { name } })),
    );
    expect(tally(results.map((r) => r.status))).toEqual({ 200: 1, 409: 15 });
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.errors[0].code).toBe("placement.duplicate_name");
    expect(await t.sql("SELECT count(*)::int AS n FROM resource_providers WHERE name = $1", [name])).toEqual([{ n: 1 }]);
  });

  it("a create that passes the duplicate check while another commits the same name gets the 409, not the unique index's error", async () => {
    const name = `late-${randomUUID()}`;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const firstInserted = new Promise<void>((resolve) => (inserted = resolve));
    const first = t.database.db.transaction(async (tx) => {
      await createProviderIn(tx, { uuid: randomUUID(), name, parentProviderUuid: null });
      inserted();
      await gate; // hold the uncommitted row while the second create runs its check
    });
    await firstInserted;
    // The second check cannot see the uncommitted row; its insert waits on the index, then fails.
    // Its failure is caught at once: it can come while this test still awaits the first create.
    const second = t.database.db
      .transaction((tx) => createProviderIn(tx, { uuid: randomUUID(), name, parentProviderUuid: null }))
      .then(() => undefined, (e: unknown) => e);
    await new Promise((r) => setTimeout(r, 200));
    release();
    await first;
    const err = await second;
    expect(err).toBeInstanceOf(DuplicateProvider);
    const answer = placementErrorFor(err);
    expect(answer?.status).toBe(409);
    expect(answer?.detail).toBe(`Conflicting resource provider name: ${name} already exists.`);
  });

  it("two providers moved under each other at the same time never form a loop", async () => {
    for (let round = 0; round < 5; round++) {
      const a = await makeProvider(t);
      const b = await makeProvider(t);
      const [ra, rb] = await Promise.all([
        t.request("PUT", `/resource_providers/${a}`, { body: { name: `rp-${a}`, parent_provider_uuid: b } }),
        t.request("PUT", `/resource_providers/${b}`, { body: { name: `rp-${b}`, parent_provider_uuid: a } }),
      ]);
      expect([ra.status, rb.status].sort()).toEqual([200, 400]);
      // Both end in one tree whose root is a provider without a parent.
      const rows = await t.sql<{ uuid: string; parent: string | null; root: string }>(
        `SELECT rp.uuid, p.uuid AS parent, r.uuid AS root FROM resource_providers rp
         LEFT JOIN resource_providers p ON p.id = rp.parent_provider_id JOIN resource_providers r ON r.id = rp.root_provider_id
         WHERE rp.uuid IN ($1, $2)`,
        [a, b],
      );
      const roots = rows.filter((r) => r.parent === null);
      expect(roots).toHaveLength(1);
      for (const r of rows) expect(r.root).toBe(roots[0].uuid);
    }
  });

  it("a child created while its parent is deleted: one of the two wins and no orphan remains", async () => {
    for (let round = 0; round < 5; round++) {
      const parent = await makeProvider(t);
      const child = randomUUID();
      const [created, deleted] = await Promise.all([
        t.request("POST", "/resource_providers", { body: { name: `c-${child}`, uuid: child, parent_provider_uuid: parent } }),
        t.request("DELETE", `/resource_providers/${parent}`),
      ]);
      expect([created.status, deleted.status]).not.toContain(500);
      expect(created.status === 200).not.toBe(deleted.status === 204);
      const orphans = await t.sql(
        "SELECT rp.uuid FROM resource_providers rp WHERE rp.parent_provider_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM resource_providers p WHERE p.id = rp.parent_provider_id)",
      );
      expect(orphans).toEqual([]);
    }
  });
});
