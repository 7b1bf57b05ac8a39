/**
 * `placement db import`: copies an upstream Placement database into an empty
 * database of ours in one transaction: read the source in one snapshot, write
 * every row with its id and generation, verify the copy against the source,
 * and commit only when nothing differs. A failure anywhere leaves the target
 * as empty as it was; the source is only ever read.
 */
import pg from "pg";
import { runMigrations } from "../db/migrate.js";
import { sqlState } from "../db/sql-state.js";
import { readUpstream, type TableName } from "./read.js";
import { openSource } from "./source.js";
import { verifyImport, type Verification } from "./verify.js";
import { assertEmpty, ImportRefused, writeUpstream } from "./write.js";

export { ImportRefused } from "./write.js";
export { SourceError } from "./source.js";

export const TABLE_LABELS: Record<TableName, string> = {
  resourceClasses: "resource classes",
  traits: "traits",
  providers: "resource providers",
  inventories: "inventories",
  providerTraits: "provider traits",
  aggregates: "aggregates",
  providerAggregates: "aggregate memberships",
  projects: "projects",
  users: "users",
  consumerTypes: "consumer types",
  consumers: "consumers",
  allocations: "allocations",
};

/** Called as each table is read (phase "read") and written (phase "write"); `done` of `total` rows. */
export type ImportProgress = (phase: "read" | "write" | "verify", table: string, done: number, total: number) => void;

export interface ImportResult {
  sourceRevision: string;
  rows: Record<TableName, number>;
  verification: Verification;
}

/** The copy was made but differs from the source; it was rolled back. */
export class ImportVerificationFailed extends Error {
  constructor(readonly verification: Verification) {
    super("the copy differs from the source; nothing was imported");
  }
}

export async function importDatabase(fromUrl: string, targetUrl: string, progress: ImportProgress = () => {}): Promise<ImportResult> {
  const migrations = new pg.Pool({ connectionString: targetUrl, max: 1 });
  migrations.on("error", () => undefined);
  try {
    await runMigrations(migrations);
  } finally {
    await migrations.end();
  }
  const target = new pg.Client({ connectionString: targetUrl });
  target.on("error", () => undefined); // surfaces as the failing query's error
  await target.connect();
  try {
    // Fail before touching the source when the answer is already no.
    await assertEmpty(target);
    const source = await openSource(fromUrl);
    try {
      const data = await readUpstream(source, (table, n) => progress("read", TABLE_LABELS[table], n, n));
      const rows = Object.fromEntries(
        (Object.keys(TABLE_LABELS) as TableName[]).map((t) => [t, data[t].length]),
      ) as Record<TableName, number>;
      await target.query("BEGIN");
      try {
        await writeUpstream(target, data, (table, n) => progress("write", TABLE_LABELS[table], n, rows[table]));
        progress("verify", "copy against source", 0, 1);
        const verification = await verifyImport(source, target);
        progress("verify", "copy against source", 1, 1);
        if (!verification.ok) throw new ImportVerificationFailed(verification);
        await target.query("COMMIT");
        return { sourceRevision: data.revision, rows, verification };
      } catch (err) {
        await target.query("ROLLBACK").catch(() => undefined);
        throw explainWriteError(err);
      }
    } finally {
      await source.close();
    }
  } finally {
    await target.end();
  }
}

/** A row our schema's constraints refuse is the source's data, not our bug: say which constraint. */
function explainWriteError(err: unknown): unknown {
  const state = sqlState(err);
  if (state === "23505" || state === "23514" || state === "23503" || state === "23502") {
    const pgErr = err as { message: string; constraint?: string; detail?: string };
    return new ImportRefused(
      `the source holds data this server's schema does not allow (${pgErr.constraint ?? state}: ${pgErr.detail ?? pgErr.message}); nothing was imported`,
    );
  }
  return err;
}
