/**
 * Connection pool and transactions. Services receive a `Tx` (a drizzle handle
 * bound to one transaction) as their first argument and never open their own.
 */
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import pg from "pg";
import * as schema from "./schema.js";
import { sqlStateMeaning } from "./sql-state.js";
import type { Logger } from "../log.js";

export type Db = NodePgDatabase<typeof schema>;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
/** Anything that can run queries: the pool-backed handle or a transaction. */
export type Queryable = Db | Tx;

export interface Database {
  pool: pg.Pool;
  db: Db;
  close(): Promise<void>;
}

/**
 * Bigint columns (SUM results, bigint ids) come back as numbers: every value we
 * sum is bounded by 2^31 per row and far below 2^53 in total. These have to be
 * pg's process-wide parsers, not the pool's `types` option: drizzle gives every
 * query its own parsers, which fall back to the process-wide ones and never to
 * the pool's. Setting the same parsers again (another pool) changes nothing.
 */
function parseBigintsAsNumbers(): void {
  pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
  pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));
}

export function openDatabase(url: string, poolSize: number, log: Logger): Database {
  parseBigintsAsNumbers();
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client can error when the server goes away (embedded postgres
  // getting Ctrl-C first); without a listener that would crash the process.
  pool.on("error", (err) => log.warn("database connection error", { error: err.message }));
  const db = drizzle(pool, { schema });
  return { pool, db, close: () => pool.end() };
}

/** A deadlock or serialization failure: the whole transaction may be tried again (see SQLSTATE_MEANINGS). */
export function isRetryable(err: unknown): boolean {
  return sqlStateMeaning(err) === "retry";
}

/**
 * Runs `work` in a transaction, retrying it from the start when PostgreSQL
 * aborts it for a deadlock or serialization failure. The retries are what let
 * concurrent writers see a 409 only for a real conflict.
 */
export async function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>, retries = 10): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction(work);
    } catch (err) {
      if (attempt >= retries || !isRetryable(err)) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 5 * (attempt + 1)));
    }
  }
}
