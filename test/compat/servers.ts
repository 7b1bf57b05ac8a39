/**
 * The two servers of a differential run, each on a fresh database of the local
 * PostgreSQL: the reference Placement 8.0.0 (Debian's python3-placement under
 * uwsgi, started by the conformance harness's reference-server script) and
 * ours (the built dist/, as `npm start` runs it, noauth2).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { freePort } from "../../src/net.js";

export const REFERENCE_SCRIPT = path.resolve(process.env.PLACEMENT_REFERENCE_SERVER ?? "../shared/conformance/reference-server");

export interface RunningServer {
  name: string;
  baseUrl: string;
  logFile: string;
  stop(): Promise<void>;
}

/** Why the reference cannot run here, or null when it can. */
export function referenceUnavailable(): string | null {
  if (!existsSync(REFERENCE_SCRIPT)) return `${REFERENCE_SCRIPT} not found`;
  for (const file of ["/usr/bin/placement-manage", "/usr/bin/placement-api", "/usr/bin/uwsgi"]) {
    if (!existsSync(file)) return `${file} not installed (apt-get install python3-placement uwsgi-core uwsgi-plugin-python3)`;
  }
  return null;
}

async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function waitReady(baseUrl: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited with status ${child.exitCode} before answering`);
    try {
      await fetch(`${baseUrl}/`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  throw new Error(`did not answer within ${timeoutMs} ms`);
}

/** Starts a server command in its own process group on a fresh database `name`. */
async function startServer(
  name: string,
  adminUrl: string,
  dbName: string,
  command: (port: number, dbUrl: string, workdir: string) => { cmd: string; args: string[]; env: NodeJS.ProcessEnv },
): Promise<RunningServer> {
  await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await adminQuery(adminUrl, `CREATE DATABASE ${dbName}`);
  const port = await freePort();
  const workdir = mkdtempSync(path.join(tmpdir(), `compat-${name}-`));
  const logFile = path.join(workdir, "server.log");
  const out = openSync(logFile, "a");
  const { cmd, args, env } = command(port, databaseUrl(adminUrl, dbName), workdir);
  const child = spawn(cmd, args, { env, stdio: ["ignore", out, out], detached: true });
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      const timer = setTimeout(() => child.pid && process.kill(-child.pid, "SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  };
  try {
    await waitReady(baseUrl, child, 120_000);
  } catch (err) {
    await stop();
    throw new Error(`${name} server: ${(err as Error).message} (log: ${logFile})`);
  }
  return {
    name,
    baseUrl,
    logFile,
    stop: async () => {
      await stop();
      rmSync(workdir, { recursive: true, force: true });
    },
  };
}

export function startReference(adminUrl: string, dbName: string): Promise<RunningServer> {
  return startServer("reference", adminUrl, dbName, (port, dbUrl, workdir) => ({
    cmd: "/usr/bin/python3",
    args: [REFERENCE_SCRIPT, String(port), dbUrl, "--policy", "default", "--cors", "off", "--workdir", path.join(workdir, "conf")],
    env: { ...process.env },
  }));
}

export function startOurs(adminUrl: string, dbName: string): Promise<RunningServer> {
  return startServer("ours", adminUrl, dbName, (port, dbUrl) => ({
    cmd: process.execPath,
    args: ["dist/src/cli.js", "serve"],
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: dbUrl,
      PLACEMENT_AUTH_STRATEGY: "noauth2",
      PLACEMENT_ALLOW_NOAUTH: "true",
      PLACEMENT_ENFORCE_NEW_DEFAULTS: "false",
      PLACEMENT_WORKERS: "1",
      LOG_LEVEL: "warn",
    },
  }));
}
