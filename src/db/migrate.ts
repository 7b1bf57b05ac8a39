/** Applies the SQL migrations in drizzle/ (idempotent; safe to run from several processes at once). */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import type pg from "pg";

/** drizzle/ sits at the project root: two levels up from src/db, three from dist/src/db. */
export function migrationsFolder(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.resolve(here, "../../drizzle"), path.resolve(here, "../../../drizzle")];
  return candidates.find((p) => existsSync(path.join(p, "meta/_journal.json"))) ?? candidates[0];
}

// Several workers may start at once against one empty database: a session
// advisory lock makes one of them migrate while the others wait, then find
// nothing left to do.
const MIGRATION_LOCK_KEY = 0x706c6163; // "plac"

export async function runMigrations(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("SET client_min_messages = warning");
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    try {
      await migrate(drizzle(client), { migrationsFolder: migrationsFolder() });
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]);
    }
  } finally {
    client.release();
  }
}
