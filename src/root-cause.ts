/**
 * The innermost error of a cause chain: drizzle wraps pg's error (whose
 * message and SQLSTATE say what went wrong) in one whose message is the query.
 * Logs and the CLI report this one, so an operator sees "relation does not
 * exist (42P01)" rather than a page of SQL.
 */
export interface RootCause {
  message: string;
  /** PostgreSQL's SQLSTATE, or a Node errno name (ECONNREFUSED). */
  code?: string;
}

export function rootCause(err: unknown): RootCause {
  let e: unknown = err;
  for (let depth = 0; depth < 10; depth++) {
    const cause = (e as { cause?: unknown } | null)?.cause;
    if (!cause || typeof cause !== "object") break;
    e = cause;
  }
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message : String(e);
  return typeof code === "string" ? { message, code } : { message };
}

/** The root cause in one line: "message (code)". */
export function rootCauseText(err: unknown): string {
  const { message, code } = rootCause(err);
  return code ? `${message} (${code})` : message;
}
