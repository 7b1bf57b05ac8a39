/**
 * How the engine's statements run: each has a fixed text (values are
 * parameters), so each runs as a named statement (db/prepared.ts) under the
 * name of its family: planned again at each execution, a batch's statement
 * spent a millisecond or two planning before it ran, on the path every batch
 * waits on, where the generic plan, chosen after the first few, is the same
 * index plan. (The plans the other modules here name are the generic plans
 * PostgreSQL keeps for these named statements, as well as their custom
 * plans.)
 */
import type { SQL } from "drizzle-orm";
import type { Queryable } from "../../../db/database.js";
import { executePrepared } from "../../../db/prepared.js";

/** The rows of `query`, run through `tx` as the named statement `name`. */
export async function namedRows<T>(tx: Queryable, name: string, query: SQL): Promise<T[]> {
  return (await executePrepared(tx, query, name)).rows as T[];
}
