/**
 * The real upstream Placement 8.0.0 (Debian's python3-placement under uwsgi),
 * started by the conformance harness's reference-server script
 * (`placement-manage db sync`, then uwsgi) on a database the caller made:
 * the one way the differential test (test/compat) and the adoption tests
 * (test/import) run the reference.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { freePort } from "../../src/net.js";

export const REFERENCE_SCRIPT = path.resolve(process.env.PLACEMENT_REFERENCE_SERVER ?? "../shared/conformance/reference-server");

/** Why the reference cannot run here, or undefined when it can. */
export function referenceUnavailable(): string | undefined {
  if (!existsSync(REFERENCE_SCRIPT)) return `${REFERENCE_SCRIPT} not found`;
  for (const file of ["/usr/bin/placement-manage", "/usr/bin/placement-api", "/usr/bin/uwsgi"]) {
    if (!existsSync(file)) return `${file} not installed (apt-get install python3-placement uwsgi-core uwsgi-plugin-python3)`;
  }
  return undefined;
}

export interface ReferenceOptions {
  /** The database, as a postgresql:// URL or in SQLAlchemy's form (postgresql+psycopg2://, mysql+pymysql://). */
  databaseUrl: string;
  /** The port to listen on; a free ephemeral port when not given. It must be free: a busy one is an error, not a wait. */
  port?: number;
  /** reference-server's --policy and --cors (its defaults: the stock policy, no CORS). */
  policy?: "default" | "open" | "secure-rbac" | "legacy-rbac";
  cors?: "on" | "off";
  readyTimeoutMs?: number;
}

export interface ReferencePlacement {
  baseUrl: string;
  logFile: string;
  /** The last part of the server's log, for error messages. */
  logTail(): string;
  /** Stops uwsgi and its workers (the whole process group) and removes the config dir. */
  stop(): Promise<void>;
}

/** Resolves when nothing listens on the port of loopback; rejects naming it otherwise. */
export function assertPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", (err) => reject(new Error(`port ${port} is in use on 127.0.0.1 (${(err as Error).message})`)));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve()));
  });
}

export async function startReferencePlacement(options: ReferenceOptions): Promise<ReferencePlacement> {
  const port = options.port ?? (await freePort());
  if (options.port !== undefined) await assertPortFree(port);
  const workdir = mkdtempSync(path.join(os.tmpdir(), "reference-placement-"));
  const logFile = path.join(workdir, "server.log");
  const out = openSync(logFile, "a");
  const args = [REFERENCE_SCRIPT, String(port), options.databaseUrl, "--workdir", path.join(workdir, "conf")];
  if (options.policy) args.push("--policy", options.policy);
  if (options.cors) args.push("--cors", options.cors);
  const child = spawn("/usr/bin/python3", args, { stdio: ["ignore", out, out], detached: true });
  const baseUrl = `http://127.0.0.1:${port}`;
  const logTail = () => readFileSync(logFile, "utf8").slice(-2000);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      const timer = setTimeout(() => {
        try {
          if (child.pid) process.kill(-child.pid, "SIGKILL");
        } catch {
          /* already gone */
        }
      }, 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(workdir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.readyTimeoutMs ?? 120_000);
  for (;;) {
    if (child.exitCode !== null) {
      const tail = logTail();
      await stop();
      throw new Error(`the reference exited (${child.exitCode}) before answering: ${tail}`);
    }
    try {
      await fetch(`${baseUrl}/`);
      break;
    } catch {
      if (Date.now() > deadline) {
        const tail = logTail();
        await stop();
        throw new Error(`the reference did not answer within ${options.readyTimeoutMs ?? 120_000} ms: ${tail}`);
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  return { baseUrl, logFile, logTail, stop };
}

/** One statement on its own connection (CREATE/DROP DATABASE for the reference's database cannot run in a transaction). */
export async function adminStatement(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
