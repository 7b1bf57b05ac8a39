/**
 * The upstream Placement database being copied, opened read-only inside one
 * consistent snapshot: every table is read as of the same instant, so a
 * consumer's allocations and the usage they add up to always agree even if
 * Placement is still answering while we read. Nothing is ever written to it.
 *
 * PostgreSQL: BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY.
 * MySQL/MariaDB (mysql2): START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY
 * at REPEATABLE READ (InnoDB's snapshot for the whole transaction).
 */
import mysql from "mysql2/promise";
import pg from "pg";
import { maskUrlPassword } from "../config-show.js";

export type Dialect = "postgresql" | "mysql";

export interface SourceDatabase {
  dialect: Dialect;
  /** The URL with its password masked, for messages. */
  shown: string;
  rows<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  /** The column as text "YYYY-MM-DDTHH:MM:SS.ffffff" (upstream stores naive UTC), or NULL. */
  timestamp(column: string): string;
  /** Ends the snapshot (a rollback: nothing was written) and disconnects. */
  close(): Promise<void>;
}

export class SourceError extends Error {}

/** Accepts SQLAlchemy URLs (postgresql+psycopg2://, mysql+pymysql://) as written in placement.conf. */
export function sourceDialect(url: string): { dialect: Dialect; url: string } {
  const m = /^([A-Za-z0-9]+)(\+[A-Za-z0-9_]+)?:\/\/(.*)$/s.exec(url);
  const scheme = m?.[1].toLowerCase();
  if (scheme === "postgresql" || scheme === "postgres") return { dialect: "postgresql", url: `postgresql://${m![3]}` };
  if (scheme === "mysql" || scheme === "mariadb") return { dialect: "mysql", url: `mysql://${m![3]}` };
  throw new SourceError(`cannot import from ${maskUrlPassword(url)}: a PostgreSQL or MySQL/MariaDB URL is needed`);
}

export async function openSource(rawUrl: string): Promise<SourceDatabase> {
  const { dialect, url } = sourceDialect(rawUrl);
  const shown = maskUrlPassword(rawUrl);
  try {
    return dialect === "postgresql" ? await openPostgres(url, shown) : await openMysql(url, shown);
  } catch (err) {
    if (err instanceof SourceError) throw err;
    throw new SourceError(`cannot read the source database ${shown}: ${(err as Error).message}`, { cause: err });
  }
}

async function openPostgres(url: string, shown: string): Promise<SourceDatabase> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined); // a lost connection surfaces as the failing query's error
  await client.connect();
  await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY");
  return {
    dialect: "postgresql",
    shown,
    rows: async <T>(sql: string) => (await client.query(sql)).rows as T[],
    timestamp: (c) => `to_char(${c}, 'YYYY-MM-DD"T"HH24:MI:SS.US')`,
    close: async () => {
      await client.query("ROLLBACK").catch(() => undefined);
      await client.end();
    },
  };
}

async function openMysql(url: string, shown: string): Promise<SourceDatabase> {
  const u = new URL(url);
  const socketPath = u.searchParams.get("unix_socket") ?? undefined;
  const connection = await mysql.createConnection({
    host: u.hostname || "localhost",
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: decodeURIComponent(u.pathname.replace(/^\//, "")),
    socketPath,
    // Counts and sums come back as exact strings, not floats.
    supportBigNumbers: true,
    bigNumberStrings: true,
    charset: "utf8mb4",
  });
  connection.on("error", () => undefined);
  await connection.query("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  await connection.query("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY");
  return {
    dialect: "mysql",
    shown,
    rows: async <T>(sql: string) => {
      const [rows] = await connection.query(sql);
      return rows as T[];
    },
    timestamp: (c) => `DATE_FORMAT(${c}, '%Y-%m-%dT%H:%i:%s.%f')`,
    close: async () => {
      await connection.query("ROLLBACK").catch(() => undefined);
      await connection.end();
    },
  };
}
