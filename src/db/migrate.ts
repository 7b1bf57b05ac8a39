/**
 * Applies the SQL migrations in drizzle/ (idempotent; safe to run from several
 * processes at once, directly or through a transaction pooler).
 *
 * drizzle's own migrator runs its bookkeeping outside the migration's
 * transaction, so its lock had to be a session advisory lock; through
 * PgBouncer in transaction mode that lock stays on whichever server
 * connection took it, and the next migrate waits on it forever. This one
 * does the whole thing in one transaction that first takes a
 * transaction-scoped advisory lock: the lock ends with the transaction,
 * whatever connection it ran on. The bookkeeping is drizzle's
 * (drizzle.__drizzle_migrations: hash, created_at = the journal's `when`),
 * so databases migrated by either stay compatible.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type pg from "pg";

/** drizzle/ sits at the project root: two levels up from src/db, three from dist/src/db. */
export function migrationsFolder(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.resolve(here, "../../drizzle"), path.resolve(here, "../../../drizzle")];
  return candidates.find((p) => existsSync(path.join(p, "meta/_journal.json"))) ?? candidates[0];
}

// Several workers or hosts may migrate one database at once: the lock makes
// one of them migrate while the others wait, then find nothing left to do.
const MIGRATION_LOCK_KEY = 0x706c6163; // "plac"

export async function runMigrations(pool: pg.Pool): Promise<void> {
  const folder = migrationsFolder();
  const migrations = readMigrationFiles({ migrationsFolder: folder });
  // readMigrationFiles reads the journal's entries in order: the same index names the same migration.
  const tags = (JSON.parse(readFileSync(path.join(folder, "meta/_journal.json"), "utf8")) as { entries: { tag: string }[] }).entries.map((e) => e.tag);
  const client = await pool.connect();
  let broken: Error | undefined;
  // What was being done, for the error: the CLI prints it above PostgreSQL's own cause (25006 on a standby, say).
  let step = "preparing the migrations table";
  try {
    await client.query("BEGIN");
    // SET LOCAL: nothing outlives the transaction on a pooled server connection.
    // No lock_timeout for the wait: the holder is another migration, which ends.
    await client.query("SET LOCAL client_min_messages = warning");
    await client.query("SET LOCAL lock_timeout = 0");
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK_KEY]);
    await client.query("CREATE SCHEMA IF NOT EXISTS drizzle");
    await client.query("CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)");
    const { rows } = await client.query<{ created_at: string }>("SELECT created_at FROM drizzle.__drizzle_migrations ORDER BY created_at DESC LIMIT 1");
    const newest = rows.length > 0 ? Number(rows[0].created_at) : -Infinity;
    for (const [i, migration] of migrations.entries()) {
      if (migration.folderMillis <= newest) continue;
      step = `applying migration ${tags[i] ?? migration.folderMillis}`;
      for (const statement of migration.sql) await client.query(statement);
      await client.query("INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ($1, $2)", [migration.hash, migration.folderMillis]);
    }
    step = "committing the migrations";
    await client.query("COMMIT");
  } catch (err) {
    // A connection that cannot even roll back is dropped, not pooled.
    await client.query("ROLLBACK").catch((e: Error) => (broken = e));
    throw new Error(`database migration failed while ${step}`, { cause: err });
  } finally {
    client.release(broken);
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
