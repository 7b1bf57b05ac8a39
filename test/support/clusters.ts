/**
 * Real PostgreSQL topologies for tests and benches, made on spare loopback
 * ports from Debian's packages: a primary (initdb), a streaming standby of it
 * (pg_basebackup -R), and PgBouncer in front of any PostgreSQL.
 *
 *   const primary = await startPrimary({ port: await freePort() });
 *   const standby = await startStandby(primary, { port: await freePort() });
 *   const bouncer = await startPgBouncer({ port: await freePort(), target: { port: 5432 } });
 *   ... primary.url, standby.url, bouncer.urlFor("dbname")
 *   await Promise.all([bouncer.stop(), standby.stop(), primary.stop()]);
 *
 * PostgreSQL and PgBouncer refuse to run as root, so when the tests run as
 * root (CI) they run as the `postgres` user through runuser; the data
 * directories are made for that user. Callers check `clusterToolsMissing()` /
 * `pgBouncerMissing()` first and skip with the message they return.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import pg from "pg";

const exec = promisify(execFile);

/** The newest PostgreSQL server binaries Debian installed (/usr/lib/postgresql/N/bin). */
export function postgresBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, "bin/initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? path.join(root, versions[0], "bin") : undefined;
}

/** Why a primary and standby cannot be made here, or undefined when they can. */
export function clusterToolsMissing(): string | undefined {
  if (!postgresBin()) return "PostgreSQL server binaries (initdb, pg_basebackup) not found under /usr/lib/postgresql: apt-get install postgresql";
  if (isRoot() && !userExists("postgres")) return "running as root without a postgres user to run PostgreSQL as";
  return undefined;
}

/** Why PgBouncer cannot be started here, or undefined when it can. */
export function pgBouncerMissing(): string | undefined {
  if (!existsSync("/usr/sbin/pgbouncer")) return "pgbouncer not installed (apt-get install pgbouncer)";
  if (isRoot() && !userExists("postgres")) return "running as root without a postgres user to run PgBouncer as";
  return undefined;
}

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function userExists(name: string): boolean {
  return existsSync("/etc/passwd") && `\n${readFileSync("/etc/passwd", "utf8")}`.includes(`\n${name}:`);
}

/** argv run as the postgres user when we are root, as ourselves otherwise. */
function asPostgres(argv: string[]): string[] {
  return isRoot() ? ["runuser", "-u", "postgres", "--", ...argv] : argv;
}

async function run(argv: string[], options: { env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const [cmd, ...args] = asPostgres(argv);
  try {
    const { stdout } = await exec(cmd, args, { env: { ...process.env, ...options.env }, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${argv.join(" ")} failed: ${e.stderr?.trim() || e.message}`);
  }
}

/** A directory the postgres user owns (PostgreSQL wants 0700 on its data directory). */
async function ownedDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o700);
  if (isRoot()) {
    const { stdout } = await exec("id", ["-u", "postgres"]);
    const { stdout: gid } = await exec("id", ["-g", "postgres"]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  return dir;
}

export interface Cluster {
  port: number;
  dataDir: string;
  /** A URL for database `db` (default postgres) as user postgres on 127.0.0.1. */
  urlFor(db?: string): string;
  url: string;
  /** Runs one statement on database `db` (default postgres). */
  query<T = Record<string, unknown>>(text: string, params?: unknown[], db?: string): Promise<T[]>;
  /** pg_ctl stop -m fast (or immediate: a crash, as a failover test wants), then the directory goes. */
  stop(mode?: "fast" | "immediate"): Promise<void>;
}

function clusterHandle(port: number, dataDir: string, socketDir: string, ownsDir: string): Cluster {
  const urlFor = (db = "postgres") => `postgresql://postgres@127.0.0.1:${port}/${db}`;
  let stopped = false;
  return {
    port,
    dataDir,
    urlFor,
    url: urlFor(),
    query: async (text, params, db) => {
      const client = new pg.Client({ connectionString: urlFor(db) });
      await client.connect();
      try {
        return (await client.query(text, params)).rows;
      } finally {
        await client.end();
      }
    },
    stop: async (mode = "fast") => {
      if (stopped) return;
      stopped = true;
      await run([path.join(postgresBin()!, "pg_ctl"), "stop", "-D", dataDir, "-m", mode, "-w"]).catch(() => undefined);
      await rm(ownsDir, { recursive: true, force: true });
      if (socketDir !== ownsDir) await rm(socketDir, { recursive: true, force: true });
    },
  };
}

async function pgCtlStart(dataDir: string, port: number, socketDir: string, extra: string[] = []): Promise<void> {
  const options = [`-p ${port}`, "-c listen_addresses=127.0.0.1", `-c unix_socket_directories=${socketDir}`, ...extra].join(" ");
  await run([path.join(postgresBin()!, "pg_ctl"), "start", "-D", dataDir, "-w", "-t", "60", "-l", path.join(dataDir, "server.log"), "-o", options]);
}

/**
 * A fresh primary: initdb with trust for local and loopback connections
 * (replication included), wal_level replica, on 127.0.0.1:`port`. `settings`
 * are extra `-c name=value` server settings.
 */
export async function startPrimary(options: { port: number; settings?: Record<string, string> }): Promise<Cluster> {
  const bin = postgresBin()!;
  const home = await ownedDir("placement-primary-");
  const dataDir = path.join(home, "data");
  await run([path.join(bin, "initdb"), "-D", dataDir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"]);
  const extra = Object.entries({ wal_level: "replica", max_wal_senders: "5", hot_standby: "on", fsync: "off", ...options.settings }).map(
    ([k, v]) => `-c ${k}=${v}`,
  );
  await pgCtlStart(dataDir, options.port, home, extra);
  return clusterHandle(options.port, dataDir, home, home);
}

/**
 * A hot standby streaming from `primary`: pg_basebackup -R (which writes
 * primary_conninfo and standby.signal), started on 127.0.0.1:`port`; it
 * resolves once the standby accepts connections and is in recovery.
 */
export async function startStandby(primary: Cluster, options: { port: number; settings?: Record<string, string> }): Promise<Cluster> {
  const bin = postgresBin()!;
  const home = await ownedDir("placement-standby-");
  const dataDir = path.join(home, "data");
  await run([path.join(bin, "pg_basebackup"), "-h", "127.0.0.1", "-p", String(primary.port), "-U", "postgres", "-D", dataDir, "-R", "-X", "stream", "-c", "fast"]);
  const extra = Object.entries({ hot_standby: "on", fsync: "off", ...options.settings }).map(([k, v]) => `-c ${k}=${v}`);
  await pgCtlStart(dataDir, options.port, home, extra);
  const standby = clusterHandle(options.port, dataDir, home, home);
  const [row] = await standby.query<{ r: boolean }>("SELECT pg_is_in_recovery() AS r");
  if (!row.r) throw new Error("the standby is not in recovery");
  return standby;
}

/** Waits until `standby` has replayed everything `primary` has written so far. */
export async function waitForReplay(primary: Cluster, standby: Cluster, timeoutMs = 30_000): Promise<void> {
  const [{ lsn }] = await primary.query<{ lsn: string }>("SELECT pg_current_wal_lsn()::text AS lsn");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [{ caught }] = await standby.query<{ caught: boolean }>("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught", [lsn]);
    if (caught) return;
    if (Date.now() > deadline) throw new Error(`the standby did not replay up to ${lsn} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface PgBouncer {
  port: number;
  /** A URL for database `db` through PgBouncer (every database is passed through to the target). */
  urlFor(db?: string): string;
  /** PgBouncer's log so far (for a failing test's message). */
  log(): Promise<string>;
  stop(): Promise<void>;
}

/**
 * PgBouncer (Debian's 1.18) on 127.0.0.1:`port` in front of `target`
 * (default the machine's 127.0.0.1:5432), auth_type trust, every database
 * passed through (`* = host=... port=...`), logging into the target as
 * `target.user` (default postgres) with `target.password` (an embedded
 * PostgreSQL has its own user and a password; the machine's trusts
 * loopback); clients connect as that user. `poolMode` default transaction, the mode large
 * deployments use; `settings` are extra [pgbouncer] lines.
 */
export async function startPgBouncer(options: {
  port: number;
  target?: { host?: string; port: number; user?: string; password?: string };
  poolMode?: "session" | "transaction" | "statement";
  settings?: Record<string, string | number>;
}): Promise<PgBouncer> {
  const dir = await ownedDir("placement-pgbouncer-");
  const target = { host: "127.0.0.1", port: 5432, ...options.target, user: options.target?.user || "postgres" };
  // A PgBouncer userlist quotes with double quotes; a password with one (or a backslash) is not written.
  if (/["\\]/.test(target.user + (target.password ?? ""))) throw new Error("a user or password PgBouncer's userlist cannot hold");
  const settings: Record<string, string | number> = {
    listen_addr: "127.0.0.1",
    listen_port: options.port,
    unix_socket_dir: "",
    auth_type: "trust",
    auth_file: path.join(dir, "userlist.txt"),
    pool_mode: options.poolMode ?? "transaction",
    max_client_conn: 1000,
    default_pool_size: 20,
    logfile: path.join(dir, "pgbouncer.log"),
    pidfile: path.join(dir, "pgbouncer.pid"),
    admin_users: target.user,
    ...options.settings,
  };
  const ini = [
    "[databases]",
    `* = host=${target.host} port=${target.port}`,
    "",
    "[pgbouncer]",
    ...Object.entries(settings).map(([k, v]) => `${k} = ${v}`),
    "",
  ].join("\n");
  const iniPath = path.join(dir, "pgbouncer.ini");
  await writeFile(iniPath, ini);
  await writeFile(settings.auth_file as string, `${JSON.stringify(target.user)} ${JSON.stringify(target.password ?? "")}\n`);
  // As root, PgBouncer itself switches to postgres (-u), so our signals reach it and not a wrapper.
  if (isRoot()) await exec("chown", ["-R", "postgres:postgres", dir]);
  const child: ChildProcess = spawn("/usr/sbin/pgbouncer", [...(isRoot() ? ["-u", "postgres"] : []), iniPath], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d) => (stderr += String(d)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const urlFor = (db = "postgres") => `postgresql://${encodeURIComponent(target.user)}@127.0.0.1:${options.port}/${db}`;
  const readLog = async () => (await readFile(settings.logfile as string, "utf8").catch(() => "")) + stderr;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited at start: ${await readLog()}`);
    const client = new pg.Client({ connectionString: urlFor("pgbouncer") });
    try {
      await client.connect();
      await client.query("SHOW VERSION");
      await client.end();
      break;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new Error(`pgbouncer did not answer on port ${options.port}: ${await readLog()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  let stopped = false;
  return {
    port: options.port,
    urlFor,
    log: readLog,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    },
  };
}
