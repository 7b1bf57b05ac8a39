/** Applies the SQL migrations in drizzle/ (idempotent; safe to run from several processes at once). */
import { existsSync, readFileSync } from "node:fs";
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

export interface SchemaVersion {
  /** The last migration applied, or null for a database never migrated. */
  current: string | null;
  /** The last migration this release ships. */
  latest: string;
  applied: number;
  /** Migrations this release would apply, oldest first. */
  pending: string[];
}

/**
 * Reads the schema version as drizzle's migrator sees it: a migration counts
 * as applied when its timestamp is at or before the newest one recorded in
 * drizzle.__drizzle_migrations (the migrator applies exactly those after it).
 */
export async function schemaVersion(pool: pg.Pool): Promise<SchemaVersion> {
  const journal = JSON.parse(readFileSync(path.join(migrationsFolder(), "meta/_journal.json"), "utf8")) as {
    entries: { tag: string; when: number }[];
  };
  const table = await pool.query<{ exists: boolean }>("SELECT to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS exists");
  let newest = -Infinity;
  if (table.rows[0].exists) {
    const { rows } = await pool.query<{ newest: string | null }>("SELECT max(created_at)::text AS newest FROM drizzle.__drizzle_migrations");
    if (rows[0].newest !== null) newest = Number(rows[0].newest);
  }
  const applied = journal.entries.filter((e) => e.when <= newest);
  return {
    current: applied.length > 0 ? applied[applied.length - 1].tag : null,
    latest: journal.entries[journal.entries.length - 1]?.tag ?? "",
    applied: applied.length,
    pending: journal.entries.filter((e) => e.when > newest).map((e) => e.tag),
  };
}
