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

/**
 * getOrCreateNamed for projects, users and consumer types at once: one
 * read for the usual case where all of them exist already.
 */
export async function resolveOwners(
  tx: Tx,
  wanted: { projects: readonly string[]; users: readonly string[]; types: readonly string[] },
): Promise<{ projects: Map<string, number>; users: Map<string, number>; types: Map<string, number> }> {
  const res = await tx.execute<{ t: "p" | "u" | "c"; id: number; name: string }>(sql`
    SELECT 'p' AS t, id, external_id AS name FROM projects WHERE external_id = ANY(${sql.param([...wanted.projects])}::text[])
    UNION ALL SELECT 'u', id, external_id FROM users WHERE external_id = ANY(${sql.param([...wanted.users])}::text[])
    UNION ALL SELECT 'c', id, name FROM consumer_types WHERE name = ANY(${sql.param([...wanted.types])}::text[])`);
  const found = { p: new Map<string, number>(), u: new Map<string, number>(), c: new Map<string, number>() };
  for (const r of res.rows) found[r.t].set(r.name, r.id);
  const complete = async (table: NamedTable, names: readonly string[], have: Map<string, number>) => {
    const missing = names.filter((n) => !have.has(n));
    if (missing.length > 0) for (const [n, id] of await getOrCreateNamed(tx, table, missing)) have.set(n, id);
    return have;
  };
  return {
    projects: await complete("projects", wanted.projects, found.p),
    users: await complete("users", wanted.users, found.u),
    types: await complete("consumer_types", wanted.types, found.c),
  };
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
  const res = await tx.execute<ConsumerRow>(
    sql`SELECT ${CONSUMER_COLUMNS} FROM consumers WHERE uuid = ANY(${sql.param([...new Set(uuids)])}::text[]) ORDER BY uuid FOR UPDATE`,
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
 * Gets or creates and locks the consumers in one statement. A new one is
 * inserted with generation 0; an existing one (also one a concurrent writer
 * created first: ON CONFLICT waits for that writer) is locked by the no-op
 * DO UPDATE, which takes the same row lock as SELECT ... FOR UPDATE and
 * returns the row as committed. Rows go in uuid order, the global order.
 * `created` tells which rows this statement inserted (xmax is 0 only there).
 */
export async function upsertConsumers(tx: Tx, consumers: readonly NewConsumer[]): Promise<Map<string, ConsumerRow & { created: boolean }>> {
  const rows = new Map<string, ConsumerRow & { created: boolean }>();
  if (consumers.length === 0) return rows;
  const sorted = [...consumers].sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
  const res = await tx.execute<ConsumerRow & { created: boolean }>(sql`
    INSERT INTO consumers AS c (uuid, project_id, user_id, consumer_type_id, generation)
    SELECT u, p, us, t, 0 FROM unnest(${sql.param(sorted.map((c) => c.uuid))}::text[], ${sql.param(sorted.map((c) => c.projectId))}::int[],
                                      ${sql.param(sorted.map((c) => c.userId))}::int[], ${sql.param(sorted.map((c) => c.consumerTypeId))}::int[])
                       WITH ORDINALITY AS x(u, p, us, t, n)
    ORDER BY n
    ON CONFLICT (uuid) DO UPDATE SET uuid = c.uuid
    RETURNING ${CONSUMER_COLUMNS}, (c.xmax = 0) AS created`);
  for (const r of res.rows) rows.set(r.uuid, r);
  return rows;
}

/** Placement's 409 for a stale consumer generation: "expected <actual> but got <given>", word for word. */
export function consumerGenerationConflict(actual: number | null, given: number | null) {
  return conflict(
    `consumer generation conflict - expected ${actual === null ? "null" : actual} but got ${given === null ? "None" : given}`,
    ErrorCode.CONCURRENT_UPDATE,
  );
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
