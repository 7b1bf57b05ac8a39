/**
 * `inventories.used`, kept by triggers on allocations and inventories: after
 * every kind of write that changes allocations or inventories, it holds the
 * amounts the writes imply, and over the whole database it equals the sum of
 * the allocations of each provider and class (usageDrift). Failed writes
 * leave it as it was.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { createProvider, PROJECT, providerGeneration, usageDrift, USER, type Provider } from "./fixtures.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

/** The stored usage of each class the provider has inventory of. */
async function storedUsage(provider: Provider): Promise<Record<string, number>> {
  const rows = await t.sql<{ name: string; used: number }>(
    `SELECT rc.name, i.used FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
     WHERE i.resource_provider_id = $1 ORDER BY rc.id`,
    [provider.id],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.used]));
}

/** The stored usage of each provider is `expected`, and no inventory row anywhere has drifted from its allocations. */
async function expectUsage(expected: Array<[Provider, Record<string, number>]>): Promise<void> {
  for (const [provider, usage] of expected) expect(await storedUsage(provider)).toEqual(usage);
  expect(await usageDrift(t)).toEqual([]);
}

const HOST = { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 }, DISK_GB: { total: 100 } };

/** One consumer's entry in a 1.38 POST /allocations body. */
const entry = (allocations: Record<string, Record<string, number>>, generation: number | null, type = "INSTANCE") => ({
  allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
  project_id: PROJECT,
  user_id: USER,
  consumer_generation: generation,
  consumer_type: type,
});

async function put(consumer: string, allocations: Record<string, Record<string, number>>, generation: number | null): Promise<void> {
  const res = await t.request("PUT", `/allocations/${consumer}`, { body: entry(allocations, generation) });
  expect(res.status, res.text).toBe(204);
}

describe("inventories.used", () => {
  it("follows PUT /allocations: a new consumer, a rewrite to other providers, a rewrite to fewer classes", async () => {
    const a = await createProvider(t, HOST);
    const b = await createProvider(t, HOST);
    const instance = newUuid();
    const neighbour = newUuid();
    await put(instance, { [a.uuid]: { VCPU: 2, MEMORY_MB: 1024, DISK_GB: 10 } }, null);
    await put(neighbour, { [a.uuid]: { VCPU: 1 } }, null);
    await expectUsage([
      [a, { VCPU: 3, MEMORY_MB: 1024, DISK_GB: 10 }],
      [b, { VCPU: 0, MEMORY_MB: 0, DISK_GB: 0 }],
    ]);
    await put(instance, { [b.uuid]: { VCPU: 4, MEMORY_MB: 2048, DISK_GB: 20 } }, 1);
    await expectUsage([
      [a, { VCPU: 1, MEMORY_MB: 0, DISK_GB: 0 }],
      [b, { VCPU: 4, MEMORY_MB: 2048, DISK_GB: 20 }],
    ]);
    await put(instance, { [b.uuid]: { VCPU: 4 } }, 2);
    await expectUsage([
      [a, { VCPU: 1, MEMORY_MB: 0, DISK_GB: 0 }],
      [b, { VCPU: 4, MEMORY_MB: 0, DISK_GB: 0 }],
    ]);
    // Split over both providers, one class on each.
    await put(instance, { [a.uuid]: { VCPU: 2 }, [b.uuid]: { DISK_GB: 30 } }, 3);
    await expectUsage([
      [a, { VCPU: 3, MEMORY_MB: 0, DISK_GB: 0 }],
      [b, { VCPU: 0, MEMORY_MB: 0, DISK_GB: 30 }],
    ]);
  });

  it("follows Nova's move: POST /allocations to a migration consumer and back, then a confirmed move", async () => {
    const source = await createProvider(t, HOST);
    const dest = await createProvider(t, HOST);
    const instance = newUuid();
    const flavor = { VCPU: 2, MEMORY_MB: 512 };
    await put(instance, { [source.uuid]: flavor }, null);

    const migration = newUuid();
    const move = await t.request("POST", "/allocations", {
      body: { [migration]: entry({ [source.uuid]: flavor }, null, "MIGRATION"), [instance]: entry({ [dest.uuid]: flavor }, 1) },
    });
    expect(move.status, move.text).toBe(204);
    // During the move both hosts hold the flavor: the source for the migration, the destination for the instance.
    await expectUsage([
      [source, { VCPU: 2, MEMORY_MB: 512, DISK_GB: 0 }],
      [dest, { VCPU: 2, MEMORY_MB: 512, DISK_GB: 0 }],
    ]);
    const revert = await t.request("POST", "/allocations", {
      body: { [instance]: entry({ [source.uuid]: flavor }, 2), [migration]: entry({}, 1, "MIGRATION") },
    });
    expect(revert.status, revert.text).toBe(204);
    await expectUsage([
      [source, { VCPU: 2, MEMORY_MB: 512, DISK_GB: 0 }],
      [dest, { VCPU: 0, MEMORY_MB: 0, DISK_GB: 0 }],
    ]);

    const second = newUuid();
    const again = await t.request("POST", "/allocations", {
      body: { [second]: entry({ [source.uuid]: flavor }, null, "MIGRATION"), [instance]: entry({ [dest.uuid]: flavor }, 3) },
    });
    expect(again.status, again.text).toBe(204);
    // Confirm: the migration's hold on the source is dropped with PUT of empty allocations.
    await put(second, {}, 1);
    await expectUsage([
      [source, { VCPU: 0, MEMORY_MB: 0, DISK_GB: 0 }],
      [dest, { VCPU: 2, MEMORY_MB: 512, DISK_GB: 0 }],
    ]);
  });

  it("drops by what a consumer held on DELETE /allocations/{consumer} and on PUT of empty allocations", async () => {
    const rp = await createProvider(t, HOST);
    const [deleted, emptied, kept] = [newUuid(), newUuid(), newUuid()];
    await put(deleted, { [rp.uuid]: { VCPU: 2, DISK_GB: 10 } }, null);
    await put(emptied, { [rp.uuid]: { VCPU: 3, MEMORY_MB: 256 } }, null);
    await put(kept, { [rp.uuid]: { VCPU: 1, DISK_GB: 5 } }, null);
    await expectUsage([[rp, { VCPU: 6, MEMORY_MB: 256, DISK_GB: 15 }]]);
    expect((await t.request("DELETE", `/allocations/${deleted}`)).status).toBe(204);
    await expectUsage([[rp, { VCPU: 4, MEMORY_MB: 256, DISK_GB: 5 }]]);
    await put(emptied, {}, 1);
    await expectUsage([[rp, { VCPU: 1, MEMORY_MB: 0, DISK_GB: 5 }]]);
  });

  it("follows POST /reshaper moving inventory and allocations from a root to a child", async () => {
    const root = await createProvider(t, { VCPU: { total: 8 }, DISK_GB: { total: 100 } });
    const child = await createProvider(t);
    await t.sql("UPDATE resource_providers SET parent_provider_id = $1, root_provider_id = $1 WHERE id = $2", [root.id, child.id]);
    const [instance, other] = [newUuid(), newUuid()];
    await put(instance, { [root.uuid]: { VCPU: 2, DISK_GB: 10 } }, null);
    await put(other, { [root.uuid]: { VCPU: 3 } }, null);
    await expectUsage([[root, { VCPU: 5, DISK_GB: 10 }], [child, {}]]);
    const res = await t.request("POST", "/reshaper", {
      body: {
        inventories: {
          [root.uuid]: { resource_provider_generation: await providerGeneration(t, root.id), inventories: { DISK_GB: { total: 100 } } },
          [child.uuid]: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } },
        },
        allocations: {
          [instance]: entry({ [root.uuid]: { DISK_GB: 10 }, [child.uuid]: { VCPU: 2 } }, 1),
          [other]: entry({ [child.uuid]: { VCPU: 3 } }, 1),
        },
      },
    });
    expect(res.status, res.text).toBe(204);
    await expectUsage([
      [root, { DISK_GB: 10 }],
      [child, { VCPU: 5 }],
    ]);
  });

  it("is kept when PUT /resource_providers/{uuid}/inventories replaces inventories that have allocations", async () => {
    const rp = await createProvider(t, HOST);
    await put(newUuid(), { [rp.uuid]: { VCPU: 2, MEMORY_MB: 1024 } }, null);
    const res = await t.request("PUT", `/resource_providers/${rp.uuid}/inventories`, {
      body: {
        resource_provider_generation: await providerGeneration(t, rp.id),
        // VCPU and MEMORY_MB change, DISK_GB (unused) goes, SRIOV_NET_VF is new.
        inventories: { VCPU: { total: 16, allocation_ratio: 2 }, MEMORY_MB: { total: 8192, reserved: 512 }, SRIOV_NET_VF: { total: 4 } },
      },
    });
    expect(res.status, res.text).toBe(200);
    await expectUsage([[rp, { VCPU: 2, MEMORY_MB: 1024, SRIOV_NET_VF: 0 }]]);
    const usages = await t.request("GET", `/resource_providers/${rp.uuid}/usages`);
    expect(usages.body.usages).toEqual({ VCPU: 2, MEMORY_MB: 1024, SRIOV_NET_VF: 0 });
  });

  it("starts at zero for an inventory class deleted and created again, and counts from there", async () => {
    const rp = await createProvider(t, HOST);
    await put(newUuid(), { [rp.uuid]: { VCPU: 2 } }, null);
    expect((await t.request("DELETE", `/resource_providers/${rp.uuid}/inventories/DISK_GB`)).status).toBe(204);
    await expectUsage([[rp, { VCPU: 2, MEMORY_MB: 0 }]]);
    const created = await t.request("POST", `/resource_providers/${rp.uuid}/inventories`, {
      version: "1.0",
      body: { resource_class: "DISK_GB", total: 50, resource_provider_generation: await providerGeneration(t, rp.id) },
    });
    expect(created.status, created.text).toBe(201);
    await expectUsage([[rp, { VCPU: 2, MEMORY_MB: 0, DISK_GB: 0 }]]);
    await put(newUuid(), { [rp.uuid]: { DISK_GB: 20 } }, null);
    await expectUsage([[rp, { VCPU: 2, MEMORY_MB: 0, DISK_GB: 20 }]]);
  });

  it("is left unchanged by writes refused for capacity", async () => {
    const a = await createProvider(t, HOST);
    const b = await createProvider(t, { VCPU: { total: 2 } });
    const instance = newUuid();
    await put(instance, { [a.uuid]: { VCPU: 4, DISK_GB: 50 } }, null);
    await put(newUuid(), { [b.uuid]: { VCPU: 1 } }, null);
    const before = await t.sql("SELECT * FROM inventories ORDER BY id");
    // A rewrite that first removes the instance's allocations from `a` (inside the transaction), then does not fit on `b`.
    const rewrite = await t.request("PUT", `/allocations/${instance}`, { body: entry({ [b.uuid]: { VCPU: 2 } }, 1) });
    expect(rewrite.status).toBe(409);
    expect(rewrite.body.errors[0].detail).toContain("exceed the capacity");
    const both = await t.request("POST", "/allocations", {
      body: { [instance]: entry({ [a.uuid]: { VCPU: 1, DISK_GB: 50 } }, 1), [newUuid()]: entry({ [a.uuid]: { DISK_GB: 60 } }, null) },
    });
    expect(both.status).toBe(409);
    expect(await t.sql("SELECT * FROM inventories ORDER BY id")).toEqual(before);
    await expectUsage([
      [a, { VCPU: 4, MEMORY_MB: 0, DISK_GB: 50 }],
      [b, { VCPU: 1 }],
    ]);
  });

  it("follows allocations changed by hand with SQL, and counts them in an inventory row created after them", async () => {
    const a = await createProvider(t, HOST);
    const b = await createProvider(t, HOST);
    const [instance, other] = [newUuid(), newUuid()];
    await put(instance, { [a.uuid]: { VCPU: 2, MEMORY_MB: 512 } }, null);
    await put(other, { [b.uuid]: { VCPU: 1 } }, null);
    // An operator's UPDATE, moving the VCPU row to another provider and changing the amount.
    await t.sql(
      `UPDATE allocations SET resource_provider_id = $1, used = 3
       WHERE consumer_id = (SELECT id FROM consumers WHERE uuid = $2) AND resource_class_id = (SELECT id FROM resource_classes WHERE name = 'VCPU')`,
      [b.id, instance],
    );
    await expectUsage([
      [a, { VCPU: 0, MEMORY_MB: 512, DISK_GB: 0 }],
      [b, { VCPU: 4, MEMORY_MB: 0, DISK_GB: 0 }],
    ]);

    // Inside one transaction, as a reshape passes through: the inventory row goes, allocations
    // change without it (not reflected anywhere), and a new row counts what is there by then.
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    try {
      await client.query("BEGIN");
      await client.query("DELETE FROM inventories WHERE resource_provider_id = $1 AND resource_class_id = 1", [a.id]);
      await client.query(
        "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used) SELECT $1, id, 1, 256 FROM consumers WHERE uuid = $2",
        [a.id, other],
      );
      await client.query("UPDATE allocations SET used = used + 256 WHERE resource_provider_id = $1 AND resource_class_id = 1", [a.id]);
      // Whatever the writer says, the row starts at what is allocated.
      await client.query("INSERT INTO inventories (resource_provider_id, resource_class_id, total, max_unit, used) VALUES ($1, 1, 4096, 4096, 7)", [a.id]);
      await client.query("COMMIT");
    } finally {
      await client.end();
    }
    // The instance's 512 + 256 and the other consumer's 256 + 256.
    await expectUsage([[a, { VCPU: 0, MEMORY_MB: 1280, DISK_GB: 0 }]]);
  });

  it("goes to zero everywhere when allocations are truncated", async () => {
    const rp = await createProvider(t, HOST);
    await put(newUuid(), { [rp.uuid]: { VCPU: 1 } }, null);
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    try {
      await client.query("BEGIN");
      await client.query("TRUNCATE allocations");
      const { rows } = await client.query("SELECT count(*)::int AS n FROM inventories WHERE used <> 0");
      expect(rows[0].n).toBe(0);
      await client.query("ROLLBACK");
    } finally {
      await client.end();
    }
    await expectUsage([[rp, { VCPU: 1, MEMORY_MB: 0, DISK_GB: 0 }]]);
  });
});
