/**
 * Telling a database that cannot serve right now (gone, restarting, full,
 * read-only, too slow) from a bug. The first kind is the operator's to fix
 * and the client's to retry; the HTTP layer answers it 503.
 */
import { errorCodes, sqlState } from "./sql-state.js";

/** The database could not run the request; `reason` says why in an operator's words. */
export class DatabaseUnavailable extends Error {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`database unavailable: ${reason}`, options);
  }
}

/** SQLSTATEs of a database that cannot take the work now, though the work itself is fine. */
const UNAVAILABLE_SQLSTATES: Record<string, string> = {
  "25006": "the database is read-only (a standby or a demoted primary)",
  "53300": "the database has too many connections",
  "53400": "the database reached a configured limit",
  "57P01": "the database terminated the connection (administrator command or shutdown)",
  "57P02": "the database is shutting down after a crash",
  "57P03": "the database is starting up or shutting down",
  "57014": "the statement ran past statement_timeout",
  "55P03": "a lock was not granted within lock_timeout",
  "25P03": "the transaction sat idle past idle_in_transaction_session_timeout",
};

/** errno codes of a connection that could not be made or was cut. */
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/**
 * Messages node-postgres gives, without any code, when a connection dies or
 * cannot be had (pg and pg-pool have no codes for these).
 */
const CONNECTION_MESSAGES = [
  /^Connection terminated/, // unexpectedly, or due to connection timeout
  /^Client has encountered a connection error and is not queryable/,
  /^Client was closed and is not queryable/,
  /^timeout exceeded when trying to connect/,
  /^Cannot use a pool after calling end on the pool/,
];

/** An error and its causes, outermost first; an AggregateError (one per address tried) stands for its first error. */
function chain(err: unknown): unknown[] {
  const out: unknown[] = [];
  for (let e = err; e && out.length < 6; ) {
    out.push(e);
    const next: unknown = e instanceof AggregateError && e.errors.length > 0 ? e.errors[0] : (e as { cause?: unknown }).cause;
    e = next;
  }
  return out;
}

/** Why the database cannot serve, when `err` says so; undefined for any other error. */
export function unavailableReason(err: unknown): string | undefined {
  if (err instanceof DatabaseUnavailable) return err.reason;
  const state = sqlState(err);
  if (state && UNAVAILABLE_SQLSTATES[state]) return UNAVAILABLE_SQLSTATES[state];
  if (state?.startsWith("08")) return "the connection to the database failed";
  const network = errorCodes(err).find((code) => NETWORK_CODES.has(code));
  if (network) return `the database cannot be reached (${network})`;
  for (const e of chain(err)) {
    const message = e instanceof Error ? e.message : "";
    if (CONNECTION_MESSAGES.some((m) => m.test(message))) return `the database connection was lost or could not be made (${message})`;
  }
  return undefined;
}

/** `err` as a DatabaseUnavailable when the database is what failed; undefined otherwise. */
export function asDatabaseUnavailable(err: unknown): DatabaseUnavailable | undefined {
  if (err instanceof DatabaseUnavailable) return err;
  const reason = unavailableReason(err);
  return reason === undefined ? undefined : new DatabaseUnavailable(reason, { cause: err });
}
