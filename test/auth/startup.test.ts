/** What an operator sees at start-up: unsafe or broken auth settings stop `placement serve` with one clear line. */
import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { cliPath, startServerProcess } from "../support/server-process.js";

const run = promisify(execFile);

/** Runs `placement serve` expecting it to refuse; resolves with its stderr. */
async function refusal(env: Record<string, string>): Promise<string> {
  const err = await run(process.execPath, [cliPath, "serve"], {
    env: { ...process.env, DATABASE_URL: "postgresql://nobody@127.0.0.1:1/never", ...env },
    timeout: 20_000,
  }).then(
    () => ({ code: 0, stderr: "" }),
    (e) => e,
  );
  expect(err.code).toBe(1);
  return err.stderr as string;
}

let db: TestDatabase;
let dir: string;
beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(path.join(os.tmpdir(), "placement-startup-"));
});
afterAll(async () => db.drop());

describe("placement serve", () => {
  it("refuses noauth2 on a non-loopback address before touching the database", async () => {
    const stderr = await refusal({ PLACEMENT_AUTH_STRATEGY: "noauth2", HOST: "0.0.0.0" });
    expect(stderr).toMatch(/^placement: refusing to serve with PLACEMENT_AUTH_STRATEGY=noauth2 on 0\.0\.0\.0/m);
  });

  it("refuses a policy file with an unknown rule or a syntax error, naming both", async () => {
    const typo = path.join(dir, "typo.yaml");
    await writeFile(typo, '"placement:allocation:manage": "role:service"\n');
    expect(await refusal({ PLACEMENT_POLICY_FILE: typo })).toContain(`placement: policy file ${typo}: unknown rule "placement:allocation:manage"`);

    const broken = path.join(dir, "broken.yaml");
    await writeFile(broken, '"placement:allocations:manage": "(role:service"\n');
    expect(await refusal({ PLACEMENT_POLICY_FILE: broken })).toContain(
      `placement: policy file ${broken}: rule "placement:allocations:manage": cannot parse rule "(role:service": missing ')'`,
    );
  });

  it("refuses keystone without its settings", async () => {
    expect(await refusal({ PLACEMENT_AUTH_STRATEGY: "keystone" })).toMatch(/PLACEMENT_AUTH_STRATEGY=keystone needs PLACEMENT_KEYSTONE_URL/);
  });

  it("serves with noauth2 on loopback, warning loudly, and applies a valid policy file", async () => {
    const open = path.join(dir, "open.yaml");
    await writeFile(open, '"placement:resource_providers:list": "@"\n');
    const server = await startServerProcess({ DATABASE_URL: db.url, PLACEMENT_POLICY_FILE: open });
    try {
      expect(server.output()).toContain("AUTHENTICATION IS DISABLED");
      const headers = { "x-auth-token": "nobody", accept: "application/json", "openstack-api-version": "placement latest" };
      expect((await fetch(`${server.baseUrl}/resource_providers`, { headers })).status).toBe(200);
      expect((await fetch(`${server.baseUrl}/resource_classes`, { headers })).status).toBe(403);
    } finally {
      await server.stop();
    }
  });
});
