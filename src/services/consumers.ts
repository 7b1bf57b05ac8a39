/**
 * Consumers, and the projects, users and consumer types they refer to.
 *
 * Projects, users and consumer types are get-or-create rows keyed by a
 * name; many writers may introduce the same one at once, so they are
 * created with INSERT ... ON CONFLICT DO NOTHING (a unique violation would
 * abort the whole transaction in PostgreSQL) and read back afterwards.
 */
import { sql } from "drizzle-orm";
import type { Tx } from "../db/database.js";
import { executePrepared } from "../db/prepared.js";
import { GenerationConflict } from "./errors.js";

export type ConsumerRow = {
  id: number;
  uuid: string;
  generation: number;
  projectId: number;
  userId: number;
  consumerTypeId: number | null;
};

type NamedTable = "projects" | "users" | "consumer_types";
const NAME_COLUMN: Record<NamedTable, string> = { projects: "external_id", users: "external_id", consumer_types: "name" };

/**
 * Ids of the rows of `table` named `names`, creating the missing ones.
 * The final read is a separate statement so it sees rows a concurrent
 * writer committed while our INSERT waited on them.
 */
export async function getOrCreateNamed(tx: Tx, table: NamedTable, names: readonly string[]): Promise<Map<string, number>> {
  const wanted = [...new Set(names)];
  const ids = new Map<string, number>();
  if (wanted.length === 0) return ids;
  const t = sql.identifier(table);
  const col = sql.identifier(NAME_COLUMN[table]);
  const read = async (list: string[]) => {
    const res = await executePrepared<{ id: number; name: string }>(
      tx,
      sql`SELECT id, ${col} AS name FROM ${t} WHERE ${col} = ANY(${sql.param(list)}::text[])`,
      `pl_${table}_by_name`,
    );
    for (const r of res.rows) ids.set(r.name, r.id);
  };
  await read(wanted);
  let missing = wanted.filter((n) => !ids.has(n));
  if (missing.length === 0) return ids;
  const inserted = await executePrepared<{ id: number; name: string }>(
    tx,
    sql`INSERT INTO ${t} (${col}) SELECT unnest(${sql.param(missing)}::text[]) ON CONFLICT (${col}) DO NOTHING RETURNING id, ${col} AS name`,
    `pl_insert_${table}`,
  );
  for (const r of inserted.rows) ids.set(r.name, r.id);
  missing = missing.filter((n) => !ids.has(n));
  if (missing.length > 0) await read(missing);
  return ids;
}

const CONSUMER_COLUMNS = sql`id, uuid, generation, project_id AS "projectId", user_id AS "userId", consumer_type_id AS "consumerTypeId"`;

/**
 * Locks the rows of the consumers with these uuids that exist. Consumer
 * rows are always locked in uuid order (here and in upsertConsumers), so
 * writers that share consumers queue up instead of deadlocking. Holding the
 * lock is what makes the generation check and the replacement of the
 * consumer's allocations one atomic step.
 */
export async function lockConsumers(tx: Tx, uuids: readonly string[]): Promise<Map<string, ConsumerRow>> {
  const found = new Map<string, ConsumerRow>();
  if (uuids.length === 0) return found;
  const res = await executePrepared<ConsumerRow>(
    tx,
    sql`SELECT ${CONSUMER_COLUMNS} FROM consumers WHERE uuid = ANY(${sql.param([...new Set(uuids)])}::text[]) ORDER BY uuid FOR UPDATE`,
    "pl_lock_consumers",
  );
  for (const r of res.rows) found.set(r.uuid, r);
  return found;
}

export interface ConsumerOwner {
  uuid: string;
  /** Project and user external ids. */
  project: string;
  user: string;
  /** Type name; undefined keeps the stored type (NULL for a new consumer). */
  type?: string;
}

export type LockedConsumer = ConsumerRow & { created: boolean };

/**
 * Gets or creates and locks the consumers, and sets their project, user and
 * type, in one statement: a new one is inserted with generation 0; an
 * existing one (also one a concurrent writer created first: ON CONFLICT
 * waits for that writer) is locked by DO UPDATE, which takes the same row
 * lock as SELECT ... FOR UPDATE and returns the committed generation. Rows
 * go in uuid order, the global consumer lock order. `created` tells which
 * rows this statement inserted (xmax is 0 only there).
 *
 * Projects, users and types are joined by name; the first time one is seen
 * it does not exist yet, its consumers are left out by the join, and they
 * are written again after the missing names are created.
 */
export async function upsertConsumers(tx: Tx, consumers: readonly ConsumerOwner[]): Promise<Map<string, LockedConsumer>> {
  const rows = await upsertWithKnownOwners(tx, consumers);
  const missing = consumers.filter((c) => !rows.has(c.uuid));
  if (missing.length > 0) {
    await getOrCreateNamed(tx, "projects", missing.map((c) => c.project));
    await getOrCreateNamed(tx, "users", missing.map((c) => c.user));
    await getOrCreateNamed(tx, "consumer_types", missing.flatMap((c) => (c.type === undefined ? [] : [c.type])));
    for (const [uuid, row] of await upsertWithKnownOwners(tx, missing)) rows.set(uuid, row);
  }
  return rows;
}

async function upsertWithKnownOwners(tx: Tx, consumers: readonly ConsumerOwner[]): Promise<Map<string, LockedConsumer>> {
  const rows = new Map<string, LockedConsumer>();
  if (consumers.length === 0) return rows;
  const sorted = [...consumers].sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  const res = await executePrepared<LockedConsumer>(tx, sql`
    INSERT INTO consumers AS c (uuid, project_id, user_id, consumer_type_id, generation)
    SELECT x.uuid, p.id, u.id, ct.id, 0
    FROM unnest(${sql.param(sorted.map((c) => c.uuid))}::text[], ${sql.param(sorted.map((c) => c.project))}::text[],
                ${sql.param(sorted.map((c) => c.user))}::text[], ${sql.param(sorted.map((c) => c.type ?? null))}::text[])
         WITH ORDINALITY AS x(uuid, project, usr, type, n)
    JOIN projects p ON p.external_id = x.project
    JOIN users u ON u.external_id = x.usr
    LEFT JOIN consumer_types ct ON ct.name = x.type
    WHERE x.type IS NULL OR ct.id IS NOT NULL
    ORDER BY x.n
    ON CONFLICT (uuid) DO UPDATE SET project_id = EXCLUDED.project_id, user_id = EXCLUDED.user_id,
       consumer_type_id = COALESCE(EXCLUDED.consumer_type_id, c.consumer_type_id)
    RETURNING ${CONSUMER_COLUMNS}, (c.xmax = 0) AS created`,
    "pl_upsert_consumers",
  );
  for (const r of res.rows) rows.set(r.uuid, r);
  return rows;
}

/** A stale consumer generation; `actual` null: the consumer does not exist yet. */
export function consumerGenerationConflict(uuid: string, actual: number | null, given: number | null): GenerationConflict {
  return new GenerationConflict({ of: "consumer", uuid, actual, given });
}

/**
 * A write's consumer_generation against the consumer's (`actual` null: it
 * does not exist yet, so only null matches); undefined (before 1.28) checks
 * nothing. A mismatch is the 409.
 */
export function checkConsumerGeneration(uuid: string, actual: number | null, given: number | null | undefined): void {
  if (given !== undefined && actual !== given) throw consumerGenerationConflict(uuid, actual, given);
}

/**
 * Placement removes a consumer once a write removes the last of its
 * allocations; so do we, in the same transaction as the write that emptied it.
 */
export async function deleteConsumersWithoutAllocations(tx: Tx, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await executePrepared(tx, sql`
    DELETE FROM consumers c WHERE c.id = ANY(${sql.param([...ids])}::int[])
      AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)`,
    "pl_delete_emptied_consumers",
  );
}
