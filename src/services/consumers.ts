/**
 * Consumers, and the projects, users and consumer types they refer to.
 *
 * Projects, users and consumer types are get-or-create rows keyed by a
 * name; many writers may introduce the same one at once, so they are
 * created with INSERT ... ON CONFLICT DO NOTHING (a unique violation would
 * abort the whole transaction in PostgreSQL) and read back afterwards.
 */
import { sql } from "drizzle-orm";
import type { Queryable, Tx } from "../db/database.js";
import { conflict, ErrorCode } from "../http/errors.js";

export type ConsumerRow = {
  id: number;
  uuid: string;
  generation: number;
  projectId: number;
  userId: number;
  consumerTypeId: number | null;
}

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
    const res = await tx.execute<{ id: number; name: string }>(
      sql`SELECT id, ${col} AS name FROM ${t} WHERE ${col} = ANY(${sql.param(list)}::text[])`,
    );
    for (const r of res.rows) ids.set(r.name, r.id);
  };
  await read(wanted);
  let missing = wanted.filter((n) => !ids.has(n));
  if (missing.length === 0) return ids;
  const inserted = await tx.execute<{ id: number; name: string }>(
    sql`INSERT INTO ${t} (${col}) SELECT unnest(${sql.param(missing)}::text[]) ON CONFLICT (${col}) DO NOTHING RETURNING id, ${col} AS name`,
  );
  for (const r of inserted.rows) ids.set(r.name, r.id);
  missing = missing.filter((n) => !ids.has(n));
  if (missing.length > 0) await read(missing);
  return ids;
}

const CONSUMER_COLUMNS = sql`id, uuid, generation, project_id AS "projectId", user_id AS "userId", consumer_type_id AS "consumerTypeId"`;

/**
 * Locks the rows of the consumers with these uuids that exist, in id order
 * (every writer does the same, so consumer locks cannot deadlock among
 * themselves). Holding the lock is what makes the generation check and the
 * replacement of the consumer's allocations one atomic step.
 */
export async function lockConsumers(tx: Tx, uuids: readonly string[]): Promise<Map<string, ConsumerRow>> {
  const found = new Map<string, ConsumerRow>();
  if (uuids.length === 0) return found;
  const res = await tx.execute<ConsumerRow>(
    sql`SELECT ${CONSUMER_COLUMNS} FROM consumers WHERE uuid = ANY(${sql.param([...new Set(uuids)])}::text[]) ORDER BY id FOR UPDATE`,
  );
  for (const r of res.rows) found.set(r.uuid, r);
  return found;
}

export interface NewConsumer {
  uuid: string;
  projectId: number;
  userId: number;
  consumerTypeId: number | null;
}

/**
 * Inserts consumers (generation 0) and returns the rows it created, locked
 * by the insert itself. A uuid a concurrent writer created first is left
 * out: ON CONFLICT waits for that writer and then skips the row, and the
 * caller treats the consumer as an existing one.
 */
export async function insertConsumers(tx: Tx, consumers: readonly NewConsumer[]): Promise<Map<string, ConsumerRow>> {
  const created = new Map<string, ConsumerRow>();
  if (consumers.length === 0) return created;
  const sorted = [...consumers].sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  const res = await tx.execute<ConsumerRow>(sql`
    INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation)
    SELECT * FROM unnest(${sql.param(sorted.map((c) => c.uuid))}::text[], ${sql.param(sorted.map((c) => c.projectId))}::int[],
                         ${sql.param(sorted.map((c) => c.userId))}::int[], ${sql.param(sorted.map((c) => c.consumerTypeId))}::int[],
                         array_fill(0, ARRAY[${sorted.length}::int]))
    ON CONFLICT (uuid) DO NOTHING
    RETURNING ${CONSUMER_COLUMNS}`);
  for (const r of res.rows) created.set(r.uuid, r);
  return created;
}

/** Placement's 409 for a stale consumer generation: "expected <actual> but got <given>", word for word. */
export function consumerGenerationConflict(actual: number | null, given: number | null) {
  return conflict(
    `consumer generation conflict - expected ${actual === null ? "null" : actual} but got ${given === null ? "None" : given}`,
    ErrorCode.CONCURRENT_UPDATE,
  );
}

/** Sets project, user and type and bumps the generation of each written consumer. */
export async function bumpConsumers(
  tx: Tx,
  updates: ReadonlyArray<{ id: number; projectId: number; userId: number; consumerTypeId: number | null }>,
): Promise<void> {
  if (updates.length === 0) return;
  await tx.execute(sql`
    UPDATE consumers c SET generation = c.generation + 1, project_id = u.project_id, user_id = u.user_id,
           consumer_type_id = u.consumer_type_id, updated_at = now()
    FROM unnest(${sql.param(updates.map((u) => u.id))}::int[], ${sql.param(updates.map((u) => u.projectId))}::int[],
                ${sql.param(updates.map((u) => u.userId))}::int[], ${sql.param(updates.map((u) => u.consumerTypeId))}::int[])
         AS u(id, project_id, user_id, consumer_type_id)
    WHERE c.id = u.id`);
}

/** Placement removes a consumer once it holds nothing; so do we, in the same transaction as the write that emptied it. */
export async function deleteConsumersWithoutAllocations(tx: Tx, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.execute(sql`
    DELETE FROM consumers c WHERE c.id = ANY(${sql.param([...ids])}::int[])
      AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)`);
}

/** The consumer's project and user external ids and type name (NULL type for consumers written before 1.38). */
export async function describeConsumer(
  q: Queryable,
  consumerId: number,
): Promise<{ projectId: string; userId: string; consumerType: string | null; generation: number }> {
  const res = await q.execute<{ projectId: string; userId: string; consumerType: string | null; generation: number }>(sql`
    SELECT p.external_id AS "projectId", u.external_id AS "userId", ct.name AS "consumerType", c.generation
    FROM consumers c JOIN projects p ON p.id = c.project_id JOIN users u ON u.id = c.user_id
    LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id WHERE c.id = ${consumerId}`);
  return res.rows[0];
}
