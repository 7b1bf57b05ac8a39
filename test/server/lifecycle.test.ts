/**
 * The server as an operator runs it: configuration errors, the CLI, the
 * embedded database (start, data surviving a restart, stale pid file) and
 * shutdown on SIGTERM.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { freePort } from "../../src/net.js";
import { cliPath, startServerProcess } from "../support/server-process.js";

const run = promisify(execFile);

describe("configuration", () => {
  it("names the variable in a one-line error", () => {
    expect(() => loadConfig({ PORT: "eighty" })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: "eighty" })).toThrow(/^invalid setting PORT: /);
    expect(() => loadConfig({ PLACEMENT_WORKERS: "0" })).toThrow(/PLACEMENT_WORKERS/);
    expect(() => loadConfig({ PLACEMENT_AUTH_STRATEGY: "none" })).toThrow(/PLACEMENT_AUTH_STRATEGY/);
  });

  it("takes defaults when nothing is set", () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(8778);
    expect(config.HOST).toBe("127.0.0.1");
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it("stops start-up with that line", async () => {
    const err = await run(process.execPath, [cliPath, "serve"], { env: { ...process.env, PORT: "-3" } }).catch((e) => e);
    expect(err.code).toBe(1);
    expect(err.stderr.trim()).toMatch(/^placement: invalid setting PORT: .*$/);
  });
});

describe("command line", () => {
  it("lists every command and setting in --help", async () => {
    const { stdout } = await run(process.execPath, [cliPath, "--help"]);
    for (const word of ["serve", "db migrate", "DATABASE_URL", "PORT", "HOST", "PLACEMENT_WORKERS", "PLACEMENT_AUTH_STRATEGY"]) {
      expect(stdout).toContain(word);
    }
  });

  it("rejects an unknown command with status 2", async () => {
    const err = await run(process.execPath, [cliPath, "launch"]).catch((e) => e);
    expect(err.code).toBe(2);
    expect(err.stderr).toContain("unknown command");
  });
});

describe("embedded PostgreSQL", () => {
  let dataDir: string;
  let dbPort: number;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "placement-lifecycle-"));
    dbPort = await freePort();
  });
  afterAll(async () => rm(dataDir, { recursive: true, force: true }));

  const env = () => ({ PLACEMENT_DATA_DIR: dataDir, PLACEMENT_EMBEDDED_DB_PORT: String(dbPort) });
  const headers = { "x-auth-token": "admin", "content-type": "application/json", "openstack-api-version": "placement 1.39" };

  it("starts without DATABASE_URL, keeps data across a restart, and stops cleanly", async () => {
    const first = await startServerProcess(env(), 60_000);
    try {
      const created = await fetch(`${first.baseUrl}/resource_classes`, {
        method: "POST",
        headers,
        body: JSON.stringify({ name: "CUSTOM_SURVIVES_RESTART" }),
      });
      expect(created.status).toBe(201);
    } finally {
      expect(await first.stop()).toBe(0);
    }

    // The embedded database stopped with the server: its port is free again.
    await expect(fetch(`http://127.0.0.1:${dbPort}`).catch((e) => e.cause?.code)).resolves.toBe("ECONNREFUSED");

    const second = await startServerProcess(env(), 60_000);
    try {
      const read = await fetch(`${second.baseUrl}/resource_classes/CUSTOM_SURVIVES_RESTART`, { headers });
      expect(read.status).toBe(200);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  });

  it("recovers from a stale postmaster.pid left by a killed server", async () => {
    // A pid that cannot be alive: the kernel's pid limit is below it.
    await writeFile(path.join(dataDir, "pg", "postmaster.pid"), "999999999\n");
    const server = await startServerProcess(env(), 60_000);
    try {
      expect((await fetch(`${server.baseUrl}/`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
