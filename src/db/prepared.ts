/**
 * Named (prepared) statements for the write path of a claim and for the
 * candidates engine's reads (services/candidates/sql.ts). An allocation
 * write is a handful of statements of a few kilobytes each; sent unnamed,
 * PostgreSQL parses and plans every one of them at every claim (its
 * statement log showed that taking longer than executing them), and the
 * server sends every text again. Named, each connection parses a text once
 * and then only binds and executes it; PostgreSQL plans it afresh for the
 * first few executions and then keeps a generic plan if that costs no more,
 * which for these statements reads every table by index.
 *
 * Only inside a transaction on a connection of a pool that keeps sessions
 * (not behind a transaction pooler: there each statement may reach another
 * server connection, where the name is unknown or names another text), and
 * through drizzle's own prepared query, so results are parsed exactly as
 * drizzle's execute parses them.
 */
import { createHash } from "node:crypto";
import type { SQL } from "drizzle-orm";
import type pg from "pg";
import type { Queryable } from "./database.js";

/** The connections whose sessions keep the statements they prepare (see keepPreparedStatements). */
const sessionClients = new WeakSet<pg.PoolClient>();

/** Marks every connection `pool` makes as one that keeps prepared statements (a pool that is not behind a transaction pooler). */
export function keepPreparedStatements(pool: pg.Pool): void {
  pool.on("connect", (client) => sessionClients.add(client));
}

/** The part of drizzle's node-postgres session this needs (its types keep these members internal). */
interface DrizzleSession {
  client?: unknown;
  dialect: { sqlToQuery(query: SQL): { sql: string; params: unknown[] } };
  prepareQuery(query: { sql: string; params: unknown[] }, fields: undefined, name: string, arrayMode: false): { execute(): Promise<pg.QueryResult> };
}

/** Distinct texts kept named: the write path has a few shapes, but each optional fragment makes another. */
const MAX_NAMES = 256;
const names = new Map<string, string>();

/**
 * A statement's name: `prefix` and a hash of its text, so one name never
 * means two texts on one connection; kept in `cache` (at most `max` texts),
 * since hashing a text of kilobytes at every request costs more than a
 * lookup of it.
 */
export function statementNameOf(cache: Map<string, string>, text: string, prefix: string, max: number): string {
  let name = cache.get(text);
  if (name === undefined) {
    if (cache.size >= max) cache.clear();
    name = `${prefix}${createHash("sha1").update(text).digest("hex").slice(0, 16)}`;
    cache.set(text, name);
  }
  return name;
}

/** Runs `query` as `q.execute` does, as a named statement where the connection keeps it (see the module header). */
export async function executePrepared<T extends Record<string, unknown>>(q: Queryable, query: SQL): Promise<pg.QueryResult<T>> {
  const session = (q as unknown as { session?: DrizzleSession }).session;
  if (!session || !sessionClients.has(session.client as pg.PoolClient)) return (await q.execute<T>(query)) as pg.QueryResult<T>;
  const compiled = session.dialect.sqlToQuery(query);
  return (await session.prepareQuery(compiled, undefined, statementNameOf(names, compiled.sql, "pl_", MAX_NAMES), false).execute()) as pg.QueryResult<T>;
}
