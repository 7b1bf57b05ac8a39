/**
 * What services write through, and the one way they open a write
 * transaction. Routes hand the Store to one service function per request;
 * the service decides the transaction's extent, retries and isolation.
 */
import { inTransaction, isRetryable, type Db, type SessionLimits, type Tx } from "../db/database.js";
import { ConcurrentUpdate } from "./errors.js";

export interface Store {
  db: Db;
  /**
   * How often an allocation write (PUT/POST/DELETE allocations, reshaper)
   * that PostgreSQL aborted as a deadlock or serialization failure is run
   * again (PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT).
   */
  allocationRetries: number;
  /** Told of every retry (the metrics count them by cause). */
  onRetry?: (cause: string) => void;
  /** Set by each write transaction itself, behind a transaction pooler (db/database.ts perTransactionLimits). */
  transactionLimits?: SessionLimits;
}

/** Retries of every other write: each is a handful of statements under row locks, so a deadlock is rare and short. */
const WRITE_RETRIES = 10;

/**
 * Runs `work` in a READ COMMITTED transaction, run again from the start when
 * PostgreSQL aborts it for a deadlock or serialization failure; every retry
 * is told to the store's onRetry (so the metrics count every write's, not
 * only the allocation writes'). Once the retries run out the client gets a
 * ConcurrentUpdate (Placement's 409 for a write that kept colliding), never
 * a 500.
 */
export async function writeTransaction<T>(
  store: Store,
  work: (tx: Tx) => Promise<T>,
  options: { retries?: number; during?: ConcurrentUpdate["during"] } = {},
): Promise<T> {
  try {
    return await inTransaction(store.db, work, options.retries ?? WRITE_RETRIES, store.onRetry, store.transactionLimits);
  } catch (err) {
    if (isRetryable(err)) throw new ConcurrentUpdate(options.during);
    throw err;
  }
}
