/**
 * POST /claims' write in one statement: the fast path of a claim of one
 * consumer whose best candidates are each on one provider (every candidate of
 * a flat cloud). The transaction of claims.ts (writeRound) is the plain
 * implementation beside it and its oracle: whatever this statement does not
 * write, that transaction does, from the same answer.
 *
 * The statement (claimStatement), run outside any transaction, so it is its
 * own transaction, committed when it returns (one round trip, no lock held
 * while the server works between statements):
 * 1. inserts the consumer (generation 1, as a new consumer stands after the
 *    ordinary write's bump), taking its row lock first, as every allocation
 *    write starts; nothing when it exists or its project or user does not;
 * 2. locks the first provider of up to FIRST_FREE_BATCH candidates, in
 *    preference order, that has room for its candidate in the statement's
 *    snapshot (fresher than the answer, so hosts filled since it are passed
 *    over without a lock; only a hint, see below) and that no other writer
 *    holds (FOR NO KEY UPDATE SKIP LOCKED, LIMIT 1). It visits them one at a
 *    time in that order and stops at the first it takes, so a claim whose
 *    best candidate is free reads that one provider's rows, not the whole
 *    batch's. Only when every provider with room is held does it lock the
 *    first of them with room, waiting for its holder (the second branch of a
 *    UNION ALL under LIMIT 1, which PostgreSQL runs only when the first
 *    returned nothing), so a claim learns what the holder left as soon as it
 *    commits, without another round trip and without holding a transaction
 *    open to find out;
 * 3. locks that provider's inventory rows of the candidate's classes, in id
 *    order (FOR UPDATE, as the usage trigger locks them), and checks the
 *    capacity rule against the values of those locked rows;
 * 4. only if it holds: inserts the allocations (whose usage trigger updates
 *    those same inventory rows) and bumps the provider's generation; the
 *    feed's triggers fire as for any write.
 * When it did not write (the consumer was not new, none had room, or the
 * locked rows had no room), its last expression fails the statement,
 * so its implicit transaction rolls back with the consumer it inserted; the
 * error names why (ClaimNotWritten).
 *
 * Why it can never overcommit under READ COMMITTED: a statement reads with
 * the snapshot it took when it started, and a lock it then waits for, or
 * takes on a row changed since, does not refresh that snapshot: only the
 * locked rows themselves are read again in their newest committed version
 * (EvalPlanQual). Usage lives in the inventory rows (`inventories.used`, kept
 * by the allocation triggers, which update those rows in every transaction
 * that changes usage), so the check reads usage, total, reserved, ratio and
 * units only from the inventory rows this statement has locked: their newest
 * committed version, which nobody else can change until this transaction
 * ends. A provider lock alone would not do: the provider row's own newest
 * version would be read, but inventory rows read beside it would be those of
 * the snapshot, older than a claim that committed between the snapshot and
 * the lock. A row deleted since the snapshot is not returned by its lock, and
 * a missing row fails the check.
 *
 * Why it cannot deadlock with the ordinary write path (allocations.ts:
 * consumers in uuid order, then providers in id order, then inventory rows in
 * id order): it takes the same kinds of lock in the same order, one of each
 * at most. The consumer row comes first and is new: it waits only for another
 * writer inserting the same uuid, which then holds nothing the claim holds.
 * The provider lock does not wait (SKIP LOCKED), or, when that took none,
 * waits for one provider while holding only the new consumer row, which no
 * writer that could hold that provider waits for (every writer locks its
 * consumers before any provider). The inventory rows are one
 * provider's, taken in one batch in id order after its provider lock, and the
 * usage trigger then locks the same rows again; every other writer of usage
 * takes inventory rows in one id-ordered batch too, so no two of them can
 * each hold a row the other waits for. The feed's advisory lock is taken at
 * commit, when nothing more is waited for.
 */
import { sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { isRetryable, poolOf, type Db } from "../db/database.js";
import { sqlState } from "../db/sql-state.js";
import { namedText } from "../db/prepared.js";
import { rootCause } from "../root-cause.js";
import type { Candidate } from "./candidates/combine.js";
import { hasRoomForSql, unitsAllowSql } from "./rules/capacity.js";

/**
 * Providers offered to one statement: enough that K claimers packing the same
 * hosts find a free one in one round trip. The statement stops at the first
 * it takes, so the bound is on the work of a claim that finds every one
 * taken or full: a room check and a lock attempt for each.
 */
export const FIRST_FREE_BATCH = 32;

/** A candidate whose resources all come from one provider. */
export const onOneProvider = (c: Candidate): boolean => c.resources.length > 0 && c.resources.every((r) => r.providerId === c.resources[0].providerId);
export const providerOf = (c: Candidate): number => c.resources[0].providerId;

/** The values of one claim statement, as SQL: parameters from the server, pgbench's variables from the bench. */
export interface ClaimStatementValues {
  consumerUuid: SQLWrapper;
  project: SQLWrapper;
  user: SQLWrapper;
  /** Type name, or NULL. */
  consumerType: SQLWrapper;
  /** Provider ids in preference order (int[]). */
  window: SQLWrapper;
  /** What each offered candidate takes, one element per provider and class (int[], int[], bigint[]). */
  providers: SQLWrapper;
  classes: SQLWrapper;
  amounts: SQLWrapper;
}

/**
 * SQL: `FROM` what the rows of `offered o` (provider_id, class_id, used) that
 * `where` selects lack room for in the snapshot (their inventory row missing,
 * or without room for `used`), as `s`: the room check of this statement and
 * of the transaction's first-free lock (claims.ts), both hints the locked rows
 * are checked against.
 */
export function offersWithoutRoomSql(where: string): string {
  return `offered o LEFT JOIN inventories s ON s.resource_provider_id = o.provider_id AND s.resource_class_id = o.class_id
        WHERE ${where} AND (s.resource_provider_id IS NULL OR NOT (${hasRoomForSql("s", "o.used")}))`;
}

/** The message's start by which the statement says it wrote nothing (see the header). */
const NOT_WRITTEN = "placement claim not written:";

/**
 * The statement (see the header). Amounts arrive as bigint so an absurd one
 * is refused by the rule, not by an integer overflow. No SQL comments in it:
 * the claims bench gives its text to pgbench on one line. Returns one row, the provider taken and its
 * generation after the claim, or fails with an invalid_text_representation
 * error (22P02) whose text says why nothing was written.
 *
 * How `chosen` reads as little as it can: the window is read in its order
 * (WITH ORDINALITY, whose order the plan keeps, so ORDER BY place needs no
 * sort) and LIMIT 1 ends the walk at the first provider locked, so a claim
 * whose best candidate is free checks the room of that one provider only.
 * Each provider's room is a scalar count, evaluated as the walk reaches it:
 * written as NOT EXISTS, the planner made it an anti-join over the whole
 * window, checked before the first lock. Each branch's lock is its own
 * query's (LockRows under its LIMIT), so it takes one provider at most
 * whatever the plan: a locking subquery joined laterally would lock every
 * provider a sort above it read. The waiting branch walks the window again
 * only when the first took nothing, and before it waits it holds nothing but
 * the new consumer.
 */
export function claimStatement(v: ClaimStatementValues): SQL {
  // How many of the resources offered on `provider` have no room in the statement's snapshot (0: it fits).
  const lacking = (provider: string) => sql.raw(`(SELECT count(*) FROM ${offersWithoutRoomSql(`o.provider_id = ${provider}`)})`);
  // The window in its order, the first provider with room locked: the first nobody holds (skip), or the first, waiting for it.
  const walk = (skip: boolean) => sql`(
        SELECT rp.id FROM unnest(${v.window}::int[]) WITH ORDINALITY AS w(id, place)
        JOIN resource_providers rp ON rp.id = w.id
        WHERE EXISTS (SELECT FROM consumer) AND ${lacking("w.id")} = 0
        ORDER BY w.place LIMIT 1
        FOR NO KEY UPDATE OF rp${skip ? sql` SKIP LOCKED` : sql``})`;
  return sql`
    WITH consumer AS (
      INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation, updated_at)
      SELECT ${v.consumerUuid}::text, p.id, u.id, ct.id, 1, now()
      FROM projects p JOIN users u ON u.external_id = ${v.user}::text
      LEFT JOIN consumer_types ct ON ct.name = ${v.consumerType}::text
      WHERE p.external_id = ${v.project}::text AND (${v.consumerType}::text IS NULL OR ct.id IS NOT NULL)
      ON CONFLICT (uuid) DO NOTHING
      RETURNING id
    ), offered AS (
      SELECT * FROM unnest(${v.providers}::int[], ${v.classes}::int[], ${v.amounts}::bigint[]) AS o(provider_id, class_id, used)
    ), chosen AS MATERIALIZED (
      SELECT id FROM ${walk(true)} free
      UNION ALL
      SELECT id FROM ${walk(false)} held
      LIMIT 1
    ), inv AS MATERIALIZED (
      SELECT i.resource_class_id, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size, i.allocation_ratio, i.used
      FROM inventories i
      WHERE i.resource_provider_id = (SELECT id FROM chosen)
        AND i.resource_class_id = ANY(ARRAY(SELECT class_id FROM offered WHERE provider_id = (SELECT id FROM chosen)))
      ORDER BY i.id FOR UPDATE
    ), verdict AS MATERIALIZED (
      SELECT (SELECT id FROM consumer) AS consumer_id, (SELECT id FROM chosen) AS provider_id,
             EXISTS (SELECT FROM chosen) AND NOT EXISTS (
               SELECT FROM offered o LEFT JOIN inv ON inv.resource_class_id = o.class_id
               WHERE o.provider_id = (SELECT id FROM chosen)
                 AND (inv.resource_class_id IS NULL OR NOT (${sql.raw(unitsAllowSql("inv", "o.used"))}) OR NOT (${sql.raw(hasRoomForSql("inv", "o.used"))}))) AS ok
    ), inserted AS (
      INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
      SELECT v.consumer_id, o.provider_id, o.class_id, o.used::int FROM verdict v JOIN offered o ON o.provider_id = v.provider_id WHERE v.ok
    ), bumped AS (
      UPDATE resource_providers SET generation = generation + 1, updated_at = now()
      WHERE id = (SELECT provider_id FROM verdict WHERE ok)
      RETURNING generation
    )
    SELECT v.provider_id AS "providerId", (SELECT generation FROM bumped) AS generation,
           CASE WHEN v.ok THEN 0
                ELSE (${sql.raw(`'${NOT_WRITTEN}'`)} || CASE WHEN v.consumer_id IS NULL THEN ' consumer'
                                              WHEN v.provider_id IS NOT NULL THEN ' refused ' || v.provider_id
                                              ELSE ' full' END)::int END AS written
    FROM verdict v`;
}

/**
 * Why the statement wrote nothing: the consumer exists (or its owner does not
 * yet); it locked no provider (full: none offered had room in its snapshot,
 * or those that had were deleted before it could lock one); or `providerId`,
 * locked, had no room in its locked rows (refused).
 */
export type NotWritten = { why: "consumer" } | { why: "full" } | { why: "refused"; providerId: number };

/** The statement's own refusal, read from its error; undefined for any other error. */
export function notWritten(err: unknown): NotWritten | undefined {
  const { message, code } = rootCause(err);
  if (code !== "22P02") return undefined;
  const at = message.indexOf(NOT_WRITTEN);
  if (at < 0) return undefined;
  const [why, id] = message.slice(at + NOT_WRITTEN.length).replace(/"$/, "").trim().split(" ");
  if (why === "consumer" || why === "full") return { why };
  if (why === "refused" && /^[0-9]+$/.test(id ?? "")) return { why, providerId: Number(id) };
  return undefined;
}

export interface OneStatementClaim {
  consumerUuid: string;
  projectId: string;
  userId: string;
  consumerType?: string;
}

/** What the statement did: the candidate it wrote and its provider's generation now, or why it wrote nothing. */
export type StatementOutcome = { written: Candidate; generation: number } | { notWritten: NotWritten } | { retryable: string };

/** The statement's text with its values as parameters $1 to $8, in ClaimStatementValues' order. */
const TEXT = (() => {
  const [consumerUuid, project, user, consumerType, window, providers, classes, amounts] = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => sql.raw(`$${n}`));
  const { sql: text } = new PgDialect().sqlToQuery(claimStatement({ consumerUuid, project, user, consumerType, window, providers, classes, amounts }));
  return namedText("pl_claim", text);
})();

/**
 * Runs the statement for `window` (one-provider candidates in preference
 * order, one per provider) outside any transaction, on a connection of the
 * pool checked out for it. Not through pool.query: pg-pool closes the
 * connection of a query that failed, and this statement fails on purpose
 * each time it writes nothing; each such close made the next claim open a
 * connection (a new PostgreSQL backend, its caches cold, its named
 * statements parsed and planned again), and the statement writes nothing
 * most often exactly when claimers contend. After the statement's own refusal the
 * connection is as good as before (its implicit transaction rolled back);
 * after any other error it is dropped, as the pool would.
 */
export async function claimInOneStatement(
  db: Db,
  consumer: OneStatementClaim,
  window: readonly Candidate[],
): Promise<StatementOutcome> {
  const offered = window.flatMap((c) => c.resources);
  const client = await poolOf(db).connect();
  let broken: Error | undefined;
  try {
    const res = await client.query<{ providerId: number; generation: number }>({
      text: TEXT,
      values: [
        consumer.consumerUuid,
        consumer.projectId,
        consumer.userId,
        consumer.consumerType ?? null,
        intArray(window.map(providerOf)),
        intArray(offered.map((r) => r.providerId)),
        intArray(offered.map((r) => r.resourceClassId)),
        intArray(offered.map((r) => r.amount)),
      ],
    });
    const row = res.rows[0];
    const written = window.find((c) => providerOf(c) === row.providerId);
    if (!written) throw new Error(`the claim statement wrote provider ${row.providerId}, not offered`);
    return { written, generation: row.generation };
  } catch (err) {
    const why = notWritten(err);
    if (why) return { notWritten: why };
    broken = err as Error;
    // A deadlock or serialization failure rolled it back whole: the transaction path runs it again.
    if (isRetryable(err)) return { retryable: sqlState(err) ?? "unknown" };
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * Integers as PostgreSQL's array literal. pg's own conversion quotes and
 * escapes each element through two regular expressions, and a claim sends
 * four arrays of up to FIRST_FREE_BATCH hosts times their classes.
 */
function intArray(values: readonly number[]): string {
  for (const v of values) if (!Number.isSafeInteger(v)) throw new Error(`not an integer: ${v}`);
  return `{${values.join(",")}}`;
}

/** The leading run of one-provider candidates of `ordered`, the first per provider, at most FIRST_FREE_BATCH. */
export function firstWindow(ordered: Iterable<Candidate>): Candidate[] {
  const window: Candidate[] = [];
  const seen = new Set<number>();
  for (const c of ordered) {
    if (!onOneProvider(c) || window.length === FIRST_FREE_BATCH) break;
    if (seen.has(providerOf(c))) continue;
    seen.add(providerOf(c));
    window.push(c);
  }
  return window;
}
