/**
 * Connection pool and the retry loop of a transaction. Services open their
 * write transactions through services/store.ts (writeTransaction, which runs
 * inTransaction); the functions they share inside one take a `Tx` (a drizzle
 * handle bound to that transaction) as their first argument.
 */
import { sql } from "drizzle-orm";
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import pg from "pg";
import * as schema from "./schema.js";
import { sqlState, sqlStateMeaning } from "./sql-state.js";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { rootCause } from "../root-cause.js";
import { statementNamer } from "./prepared.js";

export type Db = NodePgDatabase<typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
/** Anything that can run queries: the pool-backed handle or a transaction. */
export type Queryable = Db | Tx;

/**
 * The pg pool under a handle made by drizzle(pool), which carries it as
 * `$client` (its Db type does not say so): for what needs pg itself (a
 * connection of its own for LISTEN, named statements with array rows).
 */
export function poolOf(db: Db): pg.Pool {
  const pool = (db as unknown as { $client?: pg.Pool }).$client;
  if (!pool?.query || !pool.connect) throw new Error("the database handle has no pg pool");
  return pool;
}

/** The URL the pool under `db` connects with (openDatabase's), for what needs connections of its own to the same server. */
export function urlOf(db: Db): string {
  const url = poolOf(db).options.connectionString;
  if (!url) throw new Error("the database handle's pool has no connection string");
  return url;
}

export interface Database {
  pool: pg.Pool;
  db: Db;
  close(): Promise<void>;
}

/**
 * Bigint and numeric values (SUM and count results, bigint ids) come back as
 * numbers: every value we sum is bounded by 2^31 per row and far below 2^53
 * in total. Set per pool, not with pg.types.setTypeParser (which would change
 * every pg client in the process, a library's or a test's too).
 */
const AS_NUMBER: Partial<Record<number, (value: string) => number>> = {
  [pg.types.builtins.INT8]: Number,
  [pg.types.builtins.NUMERIC]: Number,
};

type TypeParsers = { getTypeParser: (oid: number, format?: "text" | "binary") => unknown };

/** pg's `types` option: the parsers above laid over `base` (pg's own defaults unless given). */
function numberParsers(base: TypeParsers = pg.types as TypeParsers): TypeParsers {
  return { getTypeParser: (oid, format) => ((format ?? "text") === "text" && AS_NUMBER[oid]) || base.getTypeParser(oid, format) };
}

/**
 * Every query a client of the pool sends passes here. The pool's `types`
 * option covers queries that bring no parsers of their own; drizzle's do
 * (its node-postgres session gives every query a getTypeParser that keeps
 * dates as text and falls back to pg's process-wide parsers, never the
 * pool's). So each client the pool makes also lays the number parsers over
 * the parsers a query brings; and, on a pool that keeps sessions, names the
 * statements that ask for a name (`nameOf`, db/prepared.ts).
 */
function shapeEveryQuery(client: pg.PoolClient, nameOf: ((text: string) => string | undefined) | undefined): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((config: unknown, ...rest: unknown[]) => {
    if (config === null || typeof config !== "object" || "submit" in config) return query(config, ...rest);
    const { types, text, name } = config as { types?: TypeParsers; text?: unknown; name?: string };
    const named = name === undefined && nameOf && typeof text === "string" ? nameOf(text) : undefined;
    if (!types && !named) return query(config, ...rest);
    return query({ ...(config as object), ...(types ? { types: numberParsers(types) } : {}), ...(named ? { name: named } : {}) }, ...rest);
  }) as typeof client.query;
}

/** Bounds on how long a connection may wait or work; 0 means no bound (PostgreSQL's own default). */
export interface SessionLimits {
  /** Longest a request waits for a pooled connection, including making a new one. */
  acquireTimeoutMs: number;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  /**
   * The URL is a pooler in transaction mode (PLACEMENT_DB_POOLER=transaction). A session setting would stay
   * on whichever server connection ran it, for other clients, and PgBouncer refuses the start-up packet's
   * settings anyway ("unsupported startup parameter"): the limits are set per transaction instead
   * (SET LOCAL in inTransaction), and single statements outside one get the server's own settings for the
   * role or database (ALTER ROLE ... SET statement_timeout, see docs/operating.md).
   */
  transactionPooler?: boolean;
}

export const NO_LIMITS: SessionLimits = { acquireTimeoutMs: 0, statementTimeoutMs: 0, lockTimeoutMs: 0, idleInTransactionTimeoutMs: 0 };

export function sessionLimits(config: Config): SessionLimits {
  return {
    acquireTimeoutMs: config.PLACEMENT_DB_ACQUIRE_TIMEOUT_MS,
    statementTimeoutMs: config.PLACEMENT_DB_STATEMENT_TIMEOUT_MS,
    lockTimeoutMs: config.PLACEMENT_DB_LOCK_TIMEOUT_MS,
    idleInTransactionTimeoutMs: config.PLACEMENT_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS,
    transactionPooler: config.PLACEMENT_DB_POOLER === "transaction",
  };
}

export function openDatabase(url: string, poolSize: number, log: Logger, limits: SessionLimits = NO_LIMITS): Database {
  const inStartup = !limits.transactionPooler;
  const pool = new pg.Pool({
    connectionString: url,
    types: numberParsers() as pg.CustomTypesConfig,
    max: poolSize,
    connectionTimeoutMillis: limits.acquireTimeoutMs,
    // Sent in the start-up packet, so every session has them before its first statement.
    statement_timeout: (inStartup && limits.statementTimeoutMs) || undefined,
    lock_timeout: (inStartup && limits.lockTimeoutMs) || undefined,
    idle_in_transaction_session_timeout: (inStartup && limits.idleInTransactionTimeoutMs) || undefined,
    // A peer that vanished without closing (failover, cut network) is noticed instead of waited on forever.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // One namer per pool: a name means one text on every connection of it.
  const nameOf = limits.transactionPooler ? undefined : statementNamer();
  pool.on("connect", (client) => shapeEveryQuery(client, nameOf));
  watchConnections(pool, log);
  const db = drizzle(pool, { schema });
  return { pool, db, close: () => pool.end() };
}

/**
 * pg-pool listens for errors only on idle clients: a client checked out (a
 * drizzle transaction, the candidates statement) whose connection dies would
 * emit 'error' with no listener and crash the process. Every client the pool
 * makes gets a listener for its whole life. The query in flight on a dead
 * client fails on its own; the client itself goes back to the pool at once,
 * marked broken so that the pool drops it, because its holder may never give
 * it back: drizzle's transaction() does not release a client whose BEGIN
 * failed, and that lost slot would starve the pool and hang its end().
 */
function watchConnections(pool: pg.Pool, log: Logger): void {
  const checkedOut = new Set<pg.PoolClient>();
  pool.on("acquire", (client) => checkedOut.add(client));
  pool.on("release", (_err, client) => checkedOut.delete(client));
  pool.on("connect", (client) => {
    client.on("error", (err) => {
      log.warn("database connection lost", { cause: rootCause(err) });
      if (!checkedOut.has(client)) return;
      const release = client.release;
      client.release = () => undefined; // the holder's own release, later, has nothing left to do
      release(err);
    });
  });
  // The pool re-emits an idle client's error; the listener above has logged it.
  pool.on("error", () => undefined);
}

/**
 * The limits each transaction must set for itself (SET LOCAL), or undefined
 * when the connection's start-up packet already set them for its session.
 */
export function perTransactionLimits(limits: SessionLimits): SessionLimits | undefined {
  return limits.transactionPooler ? limits : undefined;
}

/** A deadlock or serialization failure: the whole transaction may be tried again (see SQLSTATE_MEANINGS). */
export function isRetryable(err: unknown): boolean {
  return sqlStateMeaning(err) === "retry";
}

/**
 * Runs `work` in a transaction, retrying it from the start when PostgreSQL
 * aborts it for a deadlock or serialization failure. The retries are what let
 * concurrent writers see a 409 only for a real conflict. `limits`, when
 * given (see perTransactionLimits), are set at the start of every attempt.
 */
export async function inTransaction<T>(
  db: Db,
  work: (tx: Tx) => Promise<T>,
  retries: number,
  onRetry?: (sqlState: string) => void,
  limits?: SessionLimits,
): Promise<T> {
  const run = limits
    ? async (tx: Tx) => {
        await setLocalLimits(tx, limits);
        return work(tx);
      }
    : work;
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction(run);
    } catch (err) {
      if (attempt >= retries || !isRetryable(err)) throw err;
      onRetry?.(sqlState(err) ?? "unknown");
      await new Promise((r) => setTimeout(r, Math.random() * 5 * (attempt + 1)));
    }
  }
}

/** The session limits for this transaction only (set_config(..., true) is SET LOCAL), in one round trip. */
async function setLocalLimits(tx: Tx, limits: SessionLimits): Promise<void> {
  await tx.execute(sql`SELECT set_config('statement_timeout', ${String(limits.statementTimeoutMs)}, true),
    set_config('lock_timeout', ${String(limits.lockTimeoutMs)}, true),
    set_config('idle_in_transaction_session_timeout', ${String(limits.idleInTransactionTimeoutMs)}, true)`);
}
