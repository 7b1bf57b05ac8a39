/**
 * Query strings as Placement reads them: every `key=value` pair in order
 * (repeated keys matter: `member_of`, `required`, `same_subtree`), plus the
 * "last value wins" dictionary that Placement validates with JSON Schema.
 * Validation here is zod, reported in jsonschema's wording behind Placement's
 * "Invalid query string parameters: " prefix, since clients match on it.
 */
import type { z } from "zod";
import { badRequest } from "../http/errors.js";
import { bestMatch, describeIssue } from "../http/validation.js";

export type QueryPairs = ReadonlyArray<readonly [string, string]>;

/** All pairs of a request URL's query string, decoded, in order. */
export function queryPairs(url: string): QueryPairs {
  return [...new URL(url).searchParams.entries()];
}

/** The dictionary webob's `dict(req.GET)` gives: one entry per key, the last value. */
export function lastValues(pairs: QueryPairs): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of pairs) out[k] = v;
  return out;
}

export function allValues(pairs: QueryPairs, key: string): string[] {
  return pairs.filter(([k]) => k === key).map(([, v]) => v);
}

/** Validates the last-value dictionary; a failure is Placement's 400 with the jsonschema text. */
export function validateQuery<S extends z.ZodType>(schema: S, pairs: QueryPairs): z.output<S> {
  const dict = lastValues(pairs);
  const result = schema.safeParse(dict, { reportInput: true });
  if (result.success) return result.data;
  throw badRequest(`Invalid query string parameters: ${describeIssue(bestMatch(result.error.issues), dict)}`);
}
