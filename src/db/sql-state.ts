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
 * SQLSTATEs that can only come from a value the client sent (a NUL character
 * in a name or path, a number beyond a column's range) reaching a query.
 * Validation should stop such values first; these are the safety net that
 * keeps them a 400 instead of a 500.
 */
export const BAD_INPUT_SQLSTATES: Record<string, string> = {
  "22021": "The request contains characters that cannot be stored (such as NUL).",
  "22P05": "The request contains characters that cannot be stored (such as NUL).",
  "22003": "A number in the request is out of range.",
};
