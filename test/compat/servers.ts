/**
 * The two servers of a differential run, each on a fresh database of the local
 * PostgreSQL: the reference Placement 8.0.0 (test/support/reference-placement.ts)
 * and ours (the built dist/, as `npm start` runs it, noauth2). Each listens on
 * the port given, or on a free ephemeral one.
 */
import { spawn } from "node:child_process";
import { copyFileSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "../../src/net.js";
import { adminStatement, assertPortFree, startReferencePlacement } from "../support/reference-placement.js";

export { referenceUnavailable } from "../support/reference-placement.js";

export interface RunningServer {
  name: string;
  baseUrl: string;
  stop(): Promise<void>;
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A fresh database `name`, and the function that drops it. */
async function freshDatabase(adminUrl: string, name: string): Promise<() => Promise<void>> {
  await adminStatement(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await adminStatement(adminUrl, `CREATE DATABASE ${name}`);
  return () => adminStatement(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

export async function startReference(adminUrl: string, dbName: string, port?: number): Promise<RunningServer> {
  const drop = await freshDatabase(adminUrl, dbName);
  try {
    const server = await startReferencePlacement({ databaseUrl: databaseUrl(adminUrl, dbName), port, policy: "default", cors: "off" });
    return {
      name: "reference",
      baseUrl: server.baseUrl,
      stop: async () => {
        // COMPAT_REFERENCE_LOG=<file>: keep the reference's log (its tracebacks explain its 500s).
        if (process.env.COMPAT_REFERENCE_LOG) copyFileSync(server.logFile, process.env.COMPAT_REFERENCE_LOG);
        await server.stop();
        await drop();
      },
    };
  } catch (err) {
    await drop();
    throw new Error(`reference server: ${(err as Error).message}`);
  }
}

export async function startOurs(adminUrl: string, dbName: string, port?: number): Promise<RunningServer> {
  const drop = await freshDatabase(adminUrl, dbName);
  const listen = port ?? (await freePort());
  if (port !== undefined) await assertPortFree(port);
  const workdir = mkdtempSync(path.join(tmpdir(), "compat-ours-"));
  const logFile = path.join(workdir, "server.log");
  const out = openSync(logFile, "a");
  const env = {
    ...process.env,
    PORT: String(listen),
    HOST: "127.0.0.1",
    DATABASE_URL: databaseUrl(adminUrl, dbName),
    PLACEMENT_AUTH_STRATEGY: "noauth2",
    PLACEMENT_ALLOW_NOAUTH: "true",
    PLACEMENT_ENFORCE_NEW_DEFAULTS: "false",
    PLACEMENT_WORKERS: "1",
    LOG_LEVEL: "warn",
  };
  const child = spawn(process.execPath, ["dist/src/cli.js", "serve"], { env, stdio: ["ignore", out, out], detached: true });
  // The whole process group: a supervisor may have forked workers.
  const signal = (name: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, name);
    } catch {
      /* already gone */
    }
  };
  const baseUrl = `http://127.0.0.1:${listen}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      signal("SIGTERM");
      const timer = setTimeout(() => signal("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await drop();
    rmSync(workdir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const tail = readFileSync(logFile, "utf8").slice(-2000);
      await stop();
      throw new Error(`ours server: ${child.exitCode !== null ? `exited (${child.exitCode})` : "did not answer within 60 s"}: ${tail}`);
    }
    try {
      await fetch(`${baseUrl}/`);
      return { name: "ours", baseUrl, stop };
    } catch {
      await new Promise((r) => setTimeout(r, 150));
    }
  }
}
