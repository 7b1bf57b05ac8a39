/**
 * The server started from nothing but a placement.conf laid out as
 * kolla-ansible writes one (test/support/write-kolla-conf.sh): it finds its
 * database, policy and CORS settings there and serves the API; a bad value in
 * the file stops it naming the file, section and option.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { cliPath, projectRoot, startServerProcess, type ServerProcess } from "../support/server-process.js";

const run = promisify(execFile);

async function kollaConf(dir: string, url: string, policy = "default", cors = "off"): Promise<string> {
  const file = path.join(dir, "placement.conf");
  const sqlalchemy = url.replace(/^postgresql:/, "postgresql+psycopg2:");
  await run("bash", [path.join(projectRoot, "test/support/write-kolla-conf.sh"), file, sqlalchemy, "noauth2", policy, cors], { cwd: projectRoot });
  return file;
}

describe("a server configured by a kolla-style placement.conf", () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), "kolla-conf-"));
    const file = await kollaConf(dir, db.url, "open", "on");
    // Only where to listen comes from the environment; DATABASE_URL is left out by startServerProcess.
    server = await startServerProcess({ PLACEMENT_CONFIG_FILE: file });
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  const call = (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.baseUrl}${url}`, {
      method,
      headers: { "x-auth-token": "admin", "openstack-api-version": "placement 1.39", "content-type": "application/json", ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it("uses the database named in [placement_database] connection", async () => {
    const created = await call("POST", "/resource_providers", { name: "conf-rp", uuid: "7d1c3b2a-4f1e-4c2b-9a3e-5f6d7e8f9a0b" });
    expect(created.status).toBe(200);
    const listed = await (await call("GET", "/resource_providers?name=conf-rp")).json();
    expect(listed.resource_providers).toHaveLength(1);
  });

  it("finds policy.yaml beside the file, as oslo.policy does", async () => {
    // That file opens every placement rule to anyone; the defaults would answer 403.
    const res = await call("GET", "/resource_providers", undefined, { "x-auth-token": "someone", "x-roles": "member" });
    expect(res.status).toBe(200);
  });

  it("answers CORS from [cors] allowed_origin and allow_headers", async () => {
    const res = await fetch(`${server.baseUrl}/`, {
      method: "OPTIONS",
      headers: { origin: "http://valid.example.com", "access-control-request-method": "GET", "access-control-request-headers": "openstack-api-version" },
    });
    expect(res.headers.get("access-control-allow-origin")).toBe("http://valid.example.com");
    const refused = await fetch(`${server.baseUrl}/`, {
      method: "OPTIONS",
      headers: { origin: "http://other.example.com", "access-control-request-method": "GET" },
    });
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("logs what in the file has no effect here", () => {
    expect(server.output()).toMatch(/\[keystone_authtoken\] memcached_servers has no effect here/);
    expect(server.output()).toMatch(/section \[oslo_concurrency\] has no effect here/);
  });

  it("`placement config show` prints the file's values with the password masked", async () => {
    const file = path.join(dir, "placement.conf");
    const env = { ...process.env };
    delete env.DATABASE_URL;
    const { stdout } = await run(process.execPath, [cliPath, "config", "show", "--config-file", file], { env });
    expect(stdout).toMatch(/^PLACEMENT_KEYSTONE_PASSWORD += \*\*\*\* {2}# .*\[keystone_authtoken\] password$/m);
    expect(stdout).toMatch(/^PLACEMENT_ENFORCE_NEW_DEFAULTS += false {2}# .*\[oslo_policy\] enforce_new_defaults$/m);
    expect(stdout).toMatch(/^PLACEMENT_POLICY_FILE += \S+policy\.yaml {2}# .*policy\.yaml beside it/m);
    expect(stdout).not.toMatch(/kolla-secret/);
  });

  it("refuses to start on a bad value, naming file, section and option", async () => {
    const file = path.join(dir, "bad.conf");
    const text = await readFile(path.join(dir, "placement.conf"), "utf8");
    await writeFile(file, text.replace("max_pool_size = 5", "max_pool_size = lots"));
    const env: NodeJS.ProcessEnv = { ...process.env, PLACEMENT_CONFIG_FILE: file };
    delete env.DATABASE_URL;
    const err = await run(process.execPath, [cliPath, "serve"], { env }).catch((e) => e);
    expect(err.code).toBe(1);
    expect(err.stderr.trim()).toBe(`placement: invalid value in ${file} [placement_database] max_pool_size: "lots" is not an integer`);
  });
});
