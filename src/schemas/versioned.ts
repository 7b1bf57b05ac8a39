/**
 * A microversion table written as data: which schema applies from which
 * version, oldest first, each applying until the next one's `from` (or the
 * table's `until`, from which the request no longer has that part). Routes
 * take `table.at(mv)`; anything that documents the API (an OpenAPI
 * generator, a test) reads `table.entries`.
 */
import type { z } from "zod";
import { Microversion, type VersionString } from "../http/microversion.js";

export interface VersionedEntry<S extends z.ZodType = z.ZodType> {
  /** The first microversion the schema applies at. */
  readonly from: VersionString;
  readonly schema: S;
}

export interface Versioned<S extends z.ZodType = z.ZodType> {
  readonly entries: readonly VersionedEntry<S>[];
  /** The first microversion at which none applies any more (the request stops carrying this part), if any. */
  readonly until?: VersionString;
  /** The schema for microversion `mv`; asking below the first entry is a bug in the caller (routes gate the version first). */
  at(mv: Microversion): S;
}

export function versioned<const E extends readonly VersionedEntry[]>(entries: E, options: { until?: VersionString } = {}): Versioned<E[number]["schema"]> {
  const froms = entries.map((e) => Microversion.from(e.from));
  const until = options.until === undefined ? undefined : Microversion.from(options.until);
  if (froms.length === 0) throw new Error("a versioned table needs at least one entry");
  for (let i = 1; i < froms.length; i++) {
    if (froms[i].compare(froms[i - 1]) <= 0) throw new Error(`versioned table out of order: ${entries[i - 1].from} then ${entries[i].from}`);
  }
  if (until && until.compare(froms[froms.length - 1]) <= 0) throw new Error(`versioned table ends (${options.until}) before its last entry`);
  return {
    entries,
    until: options.until,
    at(mv: Microversion) {
      if (until && mv.compare(until) >= 0) throw new Error(`no schema from microversion ${options.until} (the route should not have asked at ${mv})`);
      for (let i = froms.length - 1; i >= 0; i--) if (mv.compare(froms[i]) >= 0) return entries[i].schema;
      throw new Error(`no schema before microversion ${entries[0].from} (the route should have refused ${mv})`);
    },
  };
}
