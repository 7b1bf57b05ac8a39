/** The `code`s along an error's cause chain (drizzle wraps pg's errors, which carry SQLSTATEs or errno names). */
export function errorCodes(err: unknown): string[] {
  const codes: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
    e = (e as { cause?: unknown }).cause;
  }
  return codes;
}

/** Reading PostgreSQL's SQLSTATE out of an error, through drizzle's wrapping. */
export function sqlState(err: unknown): string | undefined {
  return errorCodes(err).find((code) => /^[0-9A-Z]{5}$/.test(code));
}

/**
 * What a database failure means for the request:
 *   retry        run the whole transaction again (then a 409 once retries run out);
 *   unavailable  the database cannot take requests now (a 503: retry later, look at the database);
 *   unstorable, out of range  a value the client sent reached a query (a 400). Validation should
 *                stop such values first; these rows are the safety net that keeps them from a 500.
 */
export type SqlStateMeaning = "retry" | "unavailable" | "unstorable" | "out of range";

/**
 * The one list of SQLSTATEs (and socket errno names) the app gives a meaning;
 * any other database error is a bug of ours (a 500). Class 08 (connection
 * exception) is matched by its prefix, see sqlStateMeaning.
 */
export const SQLSTATE_MEANINGS: Readonly<Record<string, SqlStateMeaning>> = {
  "40P01": "retry", // deadlock_detected
  "40001": "retry", // serialization_failure
  "25006": "unavailable", // read_only_sql_transaction: a standby or a demoted primary
  "25P03": "unavailable", // idle_in_transaction_session_timeout
  "53300": "unavailable", // too_many_connections
  "53400": "unavailable", // configuration_limit_exceeded
  "55P03": "unavailable", // lock_not_available: lock_timeout
  "57014": "unavailable", // query_canceled: statement_timeout
  "57P01": "unavailable", // admin_shutdown (also pg_terminate_backend)
  "57P02": "unavailable", // crash_shutdown
  "57P03": "unavailable", // cannot_connect_now
  ECONNREFUSED: "unavailable",
  ECONNRESET: "unavailable",
  ETIMEDOUT: "unavailable",
  EPIPE: "unavailable",
  ENOTFOUND: "unavailable",
  EHOSTUNREACH: "unavailable",
  ENETUNREACH: "unavailable",
  EAI_AGAIN: "unavailable",
  "22021": "unstorable", // character_not_in_repertoire (NUL in text)
  "22P05": "unstorable", // untranslatable_character
  "22003": "out of range", // numeric_value_out_of_range
};

/**
 * What node-postgres and pg-pool say, with no code at all, when a connection
 * dies or cannot be had: these are the database being unavailable too.
 */
const CONNECTION_LOST_MESSAGES = [
  /^Connection terminated/, // unexpectedly, or due to connection timeout
  /^Client has encountered a connection error and is not queryable/,
  /^Client was closed and is not queryable/,
  /^timeout exceeded when trying to connect/,
  /^Cannot use a pool after calling end on the pool/,
];

/** The meaning of the first code along the error's cause chain that has one. */
export function sqlStateMeaning(err: unknown): SqlStateMeaning | undefined {
  for (const code of errorCodes(err)) {
    const meaning = SQLSTATE_MEANINGS[code] ?? (/^08[0-9A-Z]{3}$/.test(code) ? "unavailable" : undefined);
    if (meaning) return meaning;
  }
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const message = e instanceof Error ? e.message : "";
    if (CONNECTION_LOST_MESSAGES.some((m) => m.test(message))) return "unavailable";
  }
  return undefined;
}
