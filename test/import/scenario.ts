/**
 * The import test, for one kind of upstream database: the real Placement
 * filled with a realistic cloud through its own API, `placement db import`
 * into an empty database of ours, then every provider, inventory, usage,
 * aggregate, trait list, allocation and a set of allocation-candidates
 * queries asked of both servers: the answers must be the same, byte for byte.
 */
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import pg from "pg";
import { ImportRefused, importDatabase, type ImportResult } from "../../src/import/import-database.js";
import { openSource } from "../../src/import/source.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { cliPath, startServerProcess, type ServerProcess } from "../support/server-process.js";
import { buildCloud, httpApi, type Cloud } from "./cloud.js";
import { comparedRequests, compareServers } from "./compare.js";
import { sourceSql, startReference, type Reference } from "./reference.js";

const run = promisify(execFile);

export function importScenario(kind: "postgresql" | "mariadb", unavailable: string | undefined): void {
  if (unavailable) console.warn(`import from ${kind} skipped: ${unavailable}`);

  describe.skipIf(unavailable !== undefined)(`placement db import from upstream Placement on ${kind}`, () => {
    let reference: Reference;
    let cloud: Cloud;
    let target: TestDatabase;
    let result: ImportResult;
    let ours: ServerProcess;
    const progress: string[] = [];

    beforeAll(async () => {
      reference = await startReference(kind, inject("adminDatabaseUrl"));
      cloud = await buildCloud(httpApi(reference.baseUrl));
      target = await createTestDatabase();
      result = await importDatabase(reference.databaseUrl, target.url, (phase, table, done, total) => progress.push(`${phase} ${table} ${done}/${total}`));
      ours = await startServerProcess({ DATABASE_URL: target.url });
    }, 300_000);

    afterAll(async () => {
      await ours?.stop();
      await reference?.stop();
      await target?.drop();
    });

    it("copies every table, verifies the copy against the source and reports progress", () => {
      expect(result.sourceRevision).toBe("422ece571366");
      expect(result.rows.providers).toBe(cloud.providers.length);
      expect(result.rows.consumers).toBe(cloud.consumers.length);
      expect(result.verification.ok).toBe(true);
      expect(result.verification.checks.map((c) => c.name)).toEqual(
        expect.arrayContaining(["usage per provider and class", "allocations per consumer, provider and class", "consumer generation, project, user and type"]),
      );
      expect(progress).toContain(`write allocations ${result.rows.allocations}/${result.rows.allocations}`);
    });

    it("answers every compared request exactly as the reference does", async () => {
      const requests = comparedRequests(cloud, { usagesAt138: kind === "mariadb" });
      expect(requests.length).toBeGreaterThan(150);
      const differences = await compareServers(reference.baseUrl, ours.baseUrl, requests);
      if (differences.length > 0) writeFileSync(`/tmp/import-differences-${kind}.json`, JSON.stringify(differences, null, 1));
      expect(differences).toEqual([]);
    });

    it("keeps Nova's cached generations valid: a write with the reference's generations succeeds here", async () => {
      const consumer = cloud.consumers[0];
      const current = (await httpApi(reference.baseUrl).call("GET", `/allocations/${consumer}`, "1.38")).body;
      expect(current.consumer_generation).toBeGreaterThan(0);
      const rp = Object.keys(current.allocations)[0];
      const put = await httpApi(ours.baseUrl).call("PUT", `/allocations/${consumer}`, "1.38", {
        allocations: { [rp]: { resources: { VCPU: 1 } } },
        project_id: current.project_id,
        user_id: current.user_id,
        consumer_generation: current.consumer_generation,
        consumer_type: current.consumer_type,
      });
      expect(put.status).toBe(204);
      const provider = (await httpApi(reference.baseUrl).call("GET", `/resource_providers/${rp}`, "1.39")).body;
      const traits = await httpApi(ours.baseUrl).call("PUT", `/resource_providers/${rp}/traits`, "1.39", {
        // The PUT of allocations above bumped the provider's generation once.
        resource_provider_generation: provider.generation + 1,
        traits: ["HW_CPU_X86_AVX2"],
      });
      expect(traits.status).toBe(200);
      // New rows continue after the imported ids.
      const created = await httpApi(ours.baseUrl).call("POST", "/resource_providers", "1.39", { name: "after-import" });
      expect(created.status).toBe(200);
      const rc = await httpApi(ours.baseUrl).call("POST", "/resource_classes", "1.39", { name: "CUSTOM_AFTER_IMPORT" });
      expect(rc.status).toBe(201);
    });

    it("rolls the whole copy back when a source row breaks one of our constraints", async () => {
      // Upstream's schema has no CHECK on reserved; ours refuses reserved above total.
      const source = await openSource(reference.databaseUrl);
      const [row] = await source.rows<{ id: number; reserved: number }>("SELECT id, reserved FROM inventories ORDER BY id LIMIT 1");
      await source.close();
      await sourceSql(kind, reference.databaseUrl, `UPDATE inventories SET reserved = total + 1 WHERE id = ${Number(row.id)}`);
      const fresh = await createTestDatabase();
      try {
        const err = await importDatabase(reference.databaseUrl, fresh.url).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ImportRefused);
        expect((err as Error).message).toMatch(/inventories_reserved_range.*nothing was imported/);
        const client = new pg.Client({ connectionString: fresh.url });
        await client.connect();
        const { rows } = await client.query("SELECT (SELECT count(*) FROM resource_providers)::int AS providers, (SELECT count(*) FROM allocations)::int AS allocations");
        await client.end();
        expect(rows[0]).toEqual({ providers: 0, allocations: 0 });
      } finally {
        await sourceSql(kind, reference.databaseUrl, `UPDATE inventories SET reserved = ${Number(row.reserved)} WHERE id = ${Number(row.id)}`);
        await fresh.drop();
      }
    });

    it("refuses a second import into the now non-empty database, from the command line too", async () => {
      await expect(importDatabase(reference.databaseUrl, target.url)).rejects.toThrow(ImportRefused);
      const err = await run(process.execPath, [cliPath, "db", "import", "--from", reference.databaseUrl], {
        env: { ...process.env, DATABASE_URL: target.url },
      }).catch((e) => e);
      expect(err.code).toBe(1);
      expect(err.stderr).toMatch(/the target database is not empty \(\d+ resource providers, \d+ consumers/);
    });
  });
}
