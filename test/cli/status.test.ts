/** `placement status` as an operator runs it before and after an upgrade: healthy, unmigrated, a bad or JSON policy file, no database. */
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runPlacement } from "../support/cli-process.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";

let migrated: TestDatabase;
let empty: TestDatabase;
let dir: string;
beforeAll(async () => {
  migrated = await createTestDatabase();
  empty = await createTestDatabase({ migrated: false });
  dir = await mkdtemp(path.join(os.tmpdir(), "placement-status-"));
});
afterAll(async () => {
  await migrated?.drop();
  await empty?.drop();
});

async function status(env: Record<string, string>) {
  const run = await runPlacement(["status", "--json"], env);
  const { checks, code } = JSON.parse(run.stdout) as { checks: { name: string; result: string; details: string | null }[]; code: number };
  return { exit: run.code, code, result: Object.fromEntries(checks.map((c) => [c.name, c])) };
}

describe("placement status", () => {
  it("succeeds on a migrated database with the default policy", async () => {
    const s = await status({ DATABASE_URL: migrated.url });
    expect(s.exit).toBe(0);
    expect(s.code).toBe(0);
    for (const name of ["Database", "Database schema", "Policy file", "Incomplete consumers", "Providers over capacity"]) {
      expect(s.result[name].result, name).toBe("Success");
    }
  });

  it("prints upstream's result box without --json", async () => {
    const run = await runPlacement(["status"], { DATABASE_URL: migrated.url });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^\+-+\+\n\| Upgrade Check Results +\|\n\+-+\+\n\| Check: Database +\|\n\| Result: Success +\|\n\| Details: reachable +\|\n/);
  });

  it("fails an unmigrated database, saying what to run", async () => {
    const s = await status({ DATABASE_URL: empty.url });
    expect(s.exit).toBe(2);
    expect(s.result["Database schema"]).toMatchObject({ result: "Failure", details: expect.stringContaining("run 'placement db migrate'") });
    expect(s.result["Incomplete consumers"].details).toMatch(/^not checked/);
  });

  it("fails a policy file with an unknown rule, naming it, and warns about a JSON one", async () => {
    const bad = path.join(dir, "bad.yaml");
    await writeFile(bad, '"placement:resource_providers:lisst": "role:admin"\n');
    const s = await status({ DATABASE_URL: migrated.url, PLACEMENT_POLICY_FILE: bad });
    expect(s.exit).toBe(2);
    expect(s.result["Policy file"]).toMatchObject({ result: "Failure", details: expect.stringContaining("placement:resource_providers:lisst") });

    const json = path.join(dir, "policy.json");
    await writeFile(json, JSON.stringify({ "placement:resource_providers:list": "role:admin" }));
    const warned = await status({ DATABASE_URL: migrated.url, PLACEMENT_POLICY_FILE: json });
    expect(warned.exit).toBe(1);
    expect(warned.result["Policy file"].result).toBe("Warning");
  });

  it("fails when the database cannot be reached, with the cause", async () => {
    const s = await status({ DATABASE_URL: "postgresql://postgres@127.0.0.1:1/none" });
    expect(s.exit).toBe(2);
    expect(s.result.Database).toMatchObject({ result: "Failure", details: expect.stringContaining("ECONNREFUSED") });
  });
});
