/**
 * A real Keystone (Debian's `keystone` package) for tests: SQLite database,
 * Fernet tokens, run under uwsgi on a free loopback port from a temporary
 * directory, bootstrapped with an admin, then given the users Placement's
 * deployments have: the placement service user (role service in project
 * service), an admin and a member of a project.
 *
 *   const ks = await startKeystone({ tokenExpirationSeconds: 10 });
 *   const token = await ks.issueToken("alice");
 *   await ks.stop(); await ks.start();   // an outage and a restart, same data
 *   await ks.destroy();
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../../src/net.js";
import { installDebianPackages } from "./debian.js";

export interface KeystoneUser {
  name: string;
  password: string;
  project: string;
  projectId: string;
  userId: string;
}

export interface RealKeystone {
  url: string;
  users: { placement: KeystoneUser; admin: KeystoneUser; alice: KeystoneUser; nova: KeystoneUser };
  issueToken(user: keyof RealKeystone["users"]): Promise<string>;
  revoke(token: string): Promise<void>;
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** Why Keystone cannot run here (after trying to install it), or undefined when it can. */
export function keystoneUnavailable(): string | undefined {
  const need = ["/usr/bin/keystone-manage", "/usr/bin/keystone-wsgi-public", "/usr/bin/uwsgi"];
  if (need.some((f) => !existsSync(f))) installDebianPackages(["keystone", "uwsgi-core", "uwsgi-plugin-python3"]);
  const missing = need.filter((f) => !existsSync(f));
  return missing.length > 0 ? `${missing.join(", ")} not installed (apt-get install keystone uwsgi-core uwsgi-plugin-python3 failed)` : undefined;
}

export async function startKeystone(options: { tokenExpirationSeconds: number }): Promise<RealKeystone> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "keystone-"));
  const conf = path.join(dir, "keystone.conf");
  writeFileSync(
    conf,
    [
      "[DEFAULT]",
      "use_stderr = true",
      "[database]",
      `connection = sqlite:///${path.join(dir, "keystone.db")}`,
      "[token]",
      "provider = fernet",
      `expiration = ${options.tokenExpirationSeconds}`,
      "[fernet_tokens]",
      `key_repository = ${path.join(dir, "fernet-keys")}`,
      "[fernet_receipts]",
      `key_repository = ${path.join(dir, "fernet-keys")}`,
      "[credential]",
      `key_repository = ${path.join(dir, "credential-keys")}`,
      "[cache]",
      "enabled = false",
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const manage = (...args: string[]) => {
    const r = spawnSync("keystone-manage", ["--config-file", conf, ...args], { encoding: "utf8", timeout: 180_000 });
    if (r.status !== 0) throw new Error(`keystone-manage ${args[0]} failed: ${r.stderr?.slice(-2000)}`);
  };
  manage("db_sync");
  // Write-ahead logging: a read transaction another pooled connection keeps open no longer blocks
  // a write ("database is locked" after SQLite's busy timeout).
  const wal = spawnSync("/usr/bin/python3", ["-c", "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode=WAL')", path.join(dir, "keystone.db")]);
  if (wal.status !== 0) throw new Error(`cannot switch keystone.db to WAL: ${wal.stderr}`);
  manage("fernet_setup", "--keystone-user", "root", "--keystone-group", "root");
  manage("credential_setup", "--keystone-user", "root", "--keystone-group", "root");
  manage(
    "bootstrap",
    "--bootstrap-password", "admin-secret",
    "--bootstrap-admin-url", `${url}/v3`,
    "--bootstrap-public-url", `${url}/v3`,
    "--bootstrap-internal-url", `${url}/v3`,
    "--bootstrap-region-id", "RegionOne",
  );

  let child: ChildProcess | undefined;
  const logFile = path.join(dir, "uwsgi.log");
  const start = async () => {
    const out = openSync(logFile, "a");
    // One thread: SQLite takes one writer at a time, and a second thread's write waited out the busy timeout.
    child = spawn(
      "uwsgi",
      [
        "--plugins", "python3", "--http-socket", `127.0.0.1:${port}`, "--wsgi-file", "/usr/bin/keystone-wsgi-public",
        "--env", `OS_KEYSTONE_CONFIG_FILES=${conf}`, "--processes", "1", "--threads", "1", "--master", "--die-on-term", "--need-app",
      ],
      { stdio: ["ignore", out, out], detached: true },
    );
    const deadline = Date.now() + 90_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`keystone exited (${child.exitCode}): ${readFileSync(logFile, "utf8").slice(-2000)}`);
      try {
        if ((await fetch(`${url}/v3`, { headers: { connection: "close" } })).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`keystone did not answer within 90 s: ${readFileSync(logFile, "utf8").slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const stop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || !c.pid) return;
    const exited = new Promise((r) => c.once("exit", r));
    process.kill(-c.pid, "SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (c.exitCode === null) process.kill(-c.pid, "SIGKILL");
  };
  await start();
  try {
    return await provision(url, stop, start, dir);
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Creates the roles, projects and users the tests use, through Keystone's API as its admin. */
async function provision(url: string, stop: () => Promise<void>, start: () => Promise<void>, dir: string): Promise<RealKeystone> {
  const api = async (method: string, p: string, token: string | undefined, body?: unknown) => {
    const send = () =>
      fetch(`${url}${p}`, {
        method,
        headers: { "content-type": "application/json", connection: "close", ...(token ? { "x-auth-token": token } : {}) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    // Under load uwsgi now and then resets a connection before reading it: one more try.
    const res = await send().catch(() => send());
    const text = await res.text();
    if (res.status >= 300) throw new Error(`keystone ${method} ${p} -> ${res.status} ${text}`);
    return { headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  const passwordToken = async (name: string, password: string, project: string) =>
    (
      await api("POST", "/v3/auth/tokens?nocatalog", undefined, {
        auth: {
          identity: { methods: ["password"], password: { user: { name, password, domain: { id: "default" } } } },
          scope: { project: { name: project, domain: { id: "default" } } },
        },
      })
    ).headers.get("x-subject-token")!;

  // Tokens live only seconds here (the expiry test): a fresh admin token for every few calls.
  let admin = { token: "", at: 0 };
  const adminTokenNow = async () => {
    if (Date.now() - admin.at > 3000) admin = { token: await passwordToken("admin", "admin-secret", "admin"), at: Date.now() };
    return admin.token;
  };
  const role = async (name: string) => {
    const found = (await api("GET", `/v3/roles?name=${name}`, await adminTokenNow())).body.roles;
    return found.length > 0 ? found[0].id : (await api("POST", "/v3/roles", await adminTokenNow(), { role: { name } })).body.role.id;
  };
  const project = async (name: string) => {
    const found = (await api("GET", `/v3/projects?name=${name}`, await adminTokenNow())).body.projects;
    return found.length > 0 ? found[0].id : (await api("POST", "/v3/projects", await adminTokenNow(), { project: { name, domain_id: "default" } })).body.project.id;
  };
  const user = async (name: string, password: string, projectName: string, roleName: string): Promise<KeystoneUser> => {
    const projectId = await project(projectName);
    const existing = (await api("GET", `/v3/users?name=${name}`, await adminTokenNow())).body.users;
    const userId = existing.length > 0 ? existing[0].id : (await api("POST", "/v3/users", await adminTokenNow(), { user: { name, password, domain_id: "default" } })).body.user.id;
    await api("PUT", `/v3/projects/${projectId}/users/${userId}/roles/${await role(roleName)}`, await adminTokenNow());
    return { name, password, project: projectName, projectId, userId };
  };
  const users = {
    admin: await user("admin", "admin-secret", "admin", "admin"),
    placement: await user("placement", "placement-secret", "service", "service"),
    nova: await user("nova", "nova-secret", "service", "service"),
    alice: await user("alice", "alice-secret", "demo", "member"),
  };

  return {
    url: `${url}/v3`,
    users,
    issueToken: (name) => passwordToken(users[name].name, users[name].password, users[name].project),
    revoke: async (token) => {
      const res = await fetch(`${url}/v3/auth/tokens`, {
        method: "DELETE",
        headers: { "x-auth-token": await passwordToken("admin", "admin-secret", "admin"), "x-subject-token": token, connection: "close" },
      });
      if (res.status !== 204) throw new Error(`keystone refused to revoke the token: ${res.status}`);
    },
    stop,
    start,
    destroy: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
