/**
 * `placement audit` against data made on purpose through the API: each
 * finding is created, then reported; --delete removes orphans only with
 * confirmation, and loses to a concurrent write of the same consumer.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPlacement } from "../support/cli-process.js";
import { startHarness, type Harness } from "../support/harness.js";
import { cliPath } from "../support/server-process.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "placement-audit-"));
});

async function provider(t: Harness, inventory?: Record<string, number>, traits: string[] = []): Promise<string> {
  const uuid = randomUUID();
  expect((await t.request("POST", "/resource_providers", { body: { name: `audit-${uuid}`, uuid } })).status).toBe(200);
  let generation = 0;
  if (inventory) {
    const inventories = Object.fromEntries(Object.entries(inventory).map(([rc, total]) => [rc, { total }]));
    const res = await t.request("PUT", `/resource_providers/${uuid}/inventories`, { body: { resource_provider_generation: 0, inventories } });
    expect(res.status).toBe(200);
    generation = res.body.resource_provider_generation;
  }
  if (traits.length > 0) {
    const res = await t.request("PUT", `/resource_providers/${uuid}/traits`, { body: { resource_provider_generation: generation, traits } });
    expect(res.status).toBe(200);
  }
  return uuid;
}

async function allocate(t: Harness, consumer: string, on: Record<string, Record<string, number>>, type = "INSTANCE"): Promise<void> {
  const allocations = Object.fromEntries(Object.entries(on).map(([rp, resources]) => [rp, { resources }]));
  const body = { allocations, project_id: randomUUID(), user_id: randomUUID(), consumer_generation: null, consumer_type: type };
  expect((await t.request("PUT", `/allocations/${consumer}`, { body })).status).toBe(204);
}

async function consumersFile(uuids: string[]): Promise<string> {
  const file = path.join(dir, `known-${randomUUID()}.txt`);
  await writeFile(file, `# instances and migrations Nova knows\n${uuids.join("\n")}\n`);
  return file;
}

describe("placement audit findings", () => {
  let t: Harness;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    t = await startHarness();
    ids.full = await provider(t, { VCPU: 4 });
    ids.hostA = await provider(t, { VCPU: 8, MEMORY_MB: 1024 });
    ids.hostB = await provider(t, { VCPU: 8, MEMORY_MB: 1024 });
    ids.shared = await provider(t, { DISK_GB: 100 }, ["MISC_SHARES_VIA_AGGREGATE"]);
    ids.empty = await provider(t);

    // Over capacity: reserved raised to the total under an allocation.
    ids.onFull = randomUUID();
    await allocate(t, ids.onFull, { [ids.full]: { VCPU: 2 } });
    const reserve = { resource_provider_generation: 2, inventories: { VCPU: { total: 4, reserved: 4 } } };
    const gen = (await t.request("GET", `/resource_providers/${ids.full}`)).body.generation;
    expect((await t.request("PUT", `/resource_providers/${ids.full}/inventories`, { body: { ...reserve, resource_provider_generation: gen } })).status).toBe(200);

    // A failed move's MIGRATION consumer, three days old, and a fresh one.
    ids.oldMigration = randomUUID();
    ids.newMigration = randomUUID();
    await allocate(t, ids.oldMigration, { [ids.hostA]: { VCPU: 1 }, [ids.hostB]: { VCPU: 1 } }, "MIGRATION");
    await allocate(t, ids.newMigration, { [ids.hostA]: { VCPU: 1 } }, "MIGRATION");
    await t.sql("UPDATE consumers SET created_at = now() - interval '3 days', updated_at = now() - interval '3 days' WHERE uuid = $1", [ids.oldMigration]);

    // Doubled allocations on two hosts (lp#1707071), and an instance using shared storage beside its host (fine).
    ids.doubled = randomUUID();
    await allocate(t, ids.doubled, { [ids.hostA]: { VCPU: 1 }, [ids.hostB]: { VCPU: 1 } });
    ids.withSharedDisk = randomUUID();
    await allocate(t, ids.withSharedDisk, { [ids.hostA]: { MEMORY_MB: 64 }, [ids.shared]: { DISK_GB: 10 } });

    // Written before 1.8: no project or user, so the placeholders.
    ids.incomplete = randomUUID();
    const old = { allocations: [{ resource_provider: { uuid: ids.hostB }, resources: { MEMORY_MB: 32 } }] };
    expect((await t.request("PUT", `/allocations/${ids.incomplete}`, { version: "1.7", body: old })).status).toBe(204);

    // A consumer Nova no longer knows.
    ids.orphan = randomUUID();
    await allocate(t, ids.orphan, { [ids.hostB]: { VCPU: 1 } });
  });
  afterAll(async () => t?.close());

  const known = () => [ids.onFull, ids.oldMigration, ids.newMigration, ids.doubled, ids.withSharedDisk, ids.incomplete];

  it("reports each finding, and exits 3", async () => {
    const run = await runPlacement(["audit", "--json", "--migration-age", "2d", "--consumers-from", await consumersFile(known())], { DATABASE_URL: t.url });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(3);
    const r = JSON.parse(run.stdout);
    expect(r.over_capacity).toEqual([{ provider_uuid: ids.full, provider_name: `audit-${ids.full}`, resource_class: "VCPU", used: 2, capacity: 0 }]);
    expect(r.stale_migrations.map((c: any) => c.consumer_uuid)).toEqual([ids.oldMigration]);
    expect(r.stale_migrations[0].age_seconds).toBeGreaterThan(2 * 86400);
    expect(r.multi_root_consumers).toEqual([{ consumer_uuid: ids.doubled, consumer_type: "INSTANCE", roots: [ids.hostA, ids.hostB].sort() }]);
    expect(r.incomplete_consumers.map((c: any) => c.consumer_uuid)).toEqual([ids.incomplete]);
    expect(r.providers_without_inventory).toEqual([{ provider_uuid: ids.empty, provider_name: `audit-${ids.empty}`, children: 0 }]);
    expect(r.orphaned_consumers.map((c: any) => c.consumer_uuid)).toEqual([ids.orphan]);
    expect(r.deleted).toBeNull();
  });

  it("prints the same findings as text", async () => {
    const run = await runPlacement(["audit", "--migration-age", "2d"], { DATABASE_URL: t.url });
    expect(run.code).toBe(3);
    expect(run.stdout).toContain(`Providers over capacity (1):\n  audit-${ids.full} (${ids.full}) VCPU: 2 used of 0\n`);
    expect(run.stdout).toContain(`MIGRATION consumers older than the age given (1):\n  ${ids.oldMigration} MIGRATION`);
    expect(run.stdout).toContain(ids.doubled);
    expect(run.stdout).not.toContain("orphaned");
  });

  it("refuses --delete without --consumers-from, and a file that is not uuids, with status 2", async () => {
    const run = await runPlacement(["audit", "--delete"], { DATABASE_URL: t.url });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--delete needs --consumers-from");
    const bad = await consumersFile(["not-a-uuid"]);
    const badRun = await runPlacement(["audit", "--consumers-from", bad], { DATABASE_URL: t.url });
    expect(badRun.code).toBe(2);
    expect(badRun.stderr).toContain("not a uuid: not-a-uuid");
  });

  it("deletes orphans only when the operator says yes", async () => {
    const file = await consumersFile(known());
    const no = await runPlacement(["audit", "--json", "--consumers-from", file, "--delete"], { DATABASE_URL: t.url }, "n\n");
    expect(no.stderr).toContain("Delete 1 orphaned consumer(s) and their allocations? [y/N]");
    expect(JSON.parse(no.stdout).deleted).toBeNull();
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [ids.orphan])).toHaveLength(1);

    const yes = await runPlacement(["audit", "--json", "--consumers-from", file, "--delete"], { DATABASE_URL: t.url }, "y\n");
    expect(JSON.parse(yes.stdout).deleted).toEqual({ deleted: [ids.orphan], changed: [], gone: [] });
    // Other findings remain: still 3.
    expect(yes.code).toBe(3);
    expect(await t.sql("SELECT 1 FROM consumers WHERE uuid = $1", [ids.orphan])).toHaveLength(0);
    expect(await t.sql("SELECT 1 FROM allocations a JOIN consumers c ON c.id = a.consumer_id WHERE c.uuid = $1", [ids.orphan])).toHaveLength(0);
    // Usage follows: hostB's VCPU is what the remaining consumers hold.
    const usages = await t.request("GET", `/resource_providers/${ids.hostB}/usages`);
    expect(usages.body.usages.VCPU).toBe(2);
  });
});

describe("placement audit --delete", () => {
  let t: Harness;
  beforeAll(async () => {
    t = await startHarness();
  });
  afterAll(async () => t?.close());

  it("exits 4 when orphans were the only findings and all were deleted; then 0", async () => {
    const host = await provider(t, { VCPU: 8 });
    const kept = randomUUID();
    const orphan = randomUUID();
    await allocate(t, kept, { [host]: { VCPU: 1 } });
    await allocate(t, orphan, { [host]: { VCPU: 2 } });
    const file = await consumersFile([kept]);
    const run = await runPlacement(["audit", "--consumers-from", file, "--delete", "--yes"], { DATABASE_URL: t.url });
    expect(run.stdout).toContain("Deleted 1;");
    expect(run.code).toBe(4);
    expect((await runPlacement(["audit", "--consumers-from", file], { DATABASE_URL: t.url })).code).toBe(0);
    expect((await t.request("GET", `/resource_providers/${host}/usages`)).body.usages.VCPU).toBe(1);
  });

  it("leaves a consumer that a concurrent write changed between the audit's read and its delete", async () => {
    const host = await provider(t, { VCPU: 8, MEMORY_MB: 512 });
    const consumer = randomUUID();
    await allocate(t, consumer, { [host]: { VCPU: 1 } });
    const others = await t.sql<{ uuid: string }>("SELECT uuid FROM consumers WHERE uuid <> $1", [consumer]);
    const file = await consumersFile(others.map((o) => o.uuid));

    // A writer holds the consumer's row (as an allocation write does) while the audit reaches its delete.
    const writer = new pg.Client({ connectionString: t.url });
    await writer.connect();
    try {
      await writer.query("BEGIN");
      const [row] = (await writer.query("SELECT id, generation FROM consumers WHERE uuid = $1 FOR UPDATE", [consumer])).rows;
      const child = spawn(process.execPath, [cliPath, "audit", "--json", "--consumers-from", file, "--delete", "--yes"], {
        env: { ...process.env, DATABASE_URL: t.url, LOG_LEVEL: "warn" },
      });
      let stdout = "";
      child.stdout.on("data", (d) => (stdout += d));
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      // Wait until the audit's delete waits on the row lock.
      for (let i = 0; i < 200; i++) {
        const waiting = await writer.query("SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()");
        if (waiting.rowCount) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      // The write the audit must not undo: a new allocation and the consumer generation it bumps.
      await writer.query(
        "INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used) SELECT rp.id, $1, rc.id, 128 FROM resource_providers rp, resource_classes rc WHERE rp.uuid = $2 AND rc.name = 'MEMORY_MB'",
        [row.id, host],
      );
      await writer.query("UPDATE consumers SET generation = generation + 1, updated_at = now() WHERE id = $1", [row.id]);
      await writer.query("COMMIT");
      expect(await exited).toBe(3);
      expect(JSON.parse(stdout).deleted).toEqual({ deleted: [], changed: [consumer], gone: [] });
    } finally {
      await writer.end();
    }
    const left = await t.sql<{ n: number }>("SELECT count(*)::int AS n FROM allocations a JOIN consumers c ON c.id = a.consumer_id WHERE c.uuid = $1", [consumer]);
    expect(left[0].n).toBe(2);
    const usages = (await t.request("GET", `/resource_providers/${host}/usages`)).body.usages;
    expect(usages).toEqual({ VCPU: 1, MEMORY_MB: 128 });
  });
});
