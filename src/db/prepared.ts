/**
 * Named (prepared) statements for the write path of a claim, the
 * candidates engine's reads (services/candidates/sql/) and the cloud view's
 * catch-up statements (services/candidates/cloud-view.ts). An allocation
 * write is a handful of statements of a few kilobytes each; sent unnamed,
 * PostgreSQL parses and plans every one of them at every claim, and the
 * server sends every text again. Named, each connection parses a text once
 * and then only binds and executes it; PostgreSQL plans it afresh for the
 * first few executions and then keeps a generic plan if that costs no more,
 * which for these statements reads every table by index.
 *
 * A statement asks for a name by starting with the comment
 * `/*named:<name>*\/` (executePrepared puts it there, namedText for a text
 * sent to a pg client itself) and runs as any other, through drizzle's
 * public execute, so its results are parsed as every other statement's. The connections of a pool that keeps sessions give it
 * the name (openDatabase installs statementNamer on each): `<name>` for the
 * first text of that name, `<name>_2` and on for further texts (an optional
 * fragment makes another text), so pg_prepared_statements and the server's
 * logs show what each statement is. The names belong to the pool's
 * Database: one name never means two texts on one of its connections. Behind
 * a transaction pooler (each statement may reach another server connection,
 * where the name is unknown or names another text) nothing is named.
 */
import { sql, type SQL } from "drizzle-orm";
import type pg from "pg";
import type { Queryable } from "./database.js";

const TAG = "/*named:";

/** Distinct texts a pool names: the write path has a few shapes, but each optional fragment makes another. */
const MAX_NAMES = 256;

/** The comment that asks the pool to name a statement `name`. */
function tag(name: string): string {
  if (!/^[a-z][a-z0-9_]*$/.test(name)) throw new Error(`not a statement name: ${name}`);
  return `${TAG}${name}*/ `;
}

/** Runs `query` as `q.execute` does, as the statement `name` where the connection keeps named statements (see the header). */
export async function executePrepared<T extends Record<string, unknown>>(q: Queryable, query: SQL, name: string): Promise<pg.QueryResult<T>> {
  return (await q.execute<T>(sql`${sql.raw(tag(name))}${query}`)) as pg.QueryResult<T>;
}

/** `text` asking to run as the statement `name`, for a text sent to a client of the pool itself (client.query). */
export function namedText(name: string, text: string): string {
  return tag(name) + text;
}

/**
 * The names one pool gives the texts that ask for one (undefined for the
 * others): at most `max` texts are named, and past that a new text runs
 * unnamed, so a name is never given to a second text.
 */
export function statementNamer(max = MAX_NAMES): (text: string) => string | undefined {
  const names = new Map<string, string>();
  const texts = new Map<string, number>();
  return (text) => {
    if (!text.startsWith(TAG)) return undefined;
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= max) return undefined;
      const base = text.slice(TAG.length, text.indexOf("*/"));
      const n = (texts.get(base) ?? 0) + 1;
      texts.set(base, n);
      name = n === 1 ? base : `${base}_${n}`;
      names.set(text, name);
    }
    return name;
  };
}
