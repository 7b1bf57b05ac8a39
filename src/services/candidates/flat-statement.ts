/**
 * The one-statement plan for flat clouds: name lookup, the "is this cloud
 * flat?" check (cloud-shape.ts), the filter and each matching provider's
 * usage in one statement, with no transaction around it (one statement is
 * one snapshot). Each candidate's uuid, capacities and traits come from
 * provider-details.ts, which reads them only for providers it has not seen
 * at their current version. It runs as a named (prepared) statement, so
 * PostgreSQL plans each request shape once per connection and then keeps a
 * generic plan instead of planning at every request.
 *
 * Why this shape:
 * - Capacity is one aggregation over `inventories` per provider, counting the
 *   requested classes that fit (`count(r.id) >= n`, the rule in the join to
 *   the requested classes), instead of a correlated check per provider and
 *   class. The rule sits in the join rather than in a FILTER of the count:
 *   every aggregate PostgreSQL evaluates per row costs about as much as the
 *   rest of the pass, and in the join it is checked only on requested rows. Usage is the row's own `used`
 *   column (kept by triggers on allocations), so no allocation is read: the
 *   cost does not grow with the number of allocations. The requested classes
 *   are a small CTE hash-joined to each inventory row.
 * - Usage travels only where it is not zero ("classId used ..."), since it is
 *   the one part of a summary that changes without a version bump.
 * - Several groups asking for one class on the one provider are checked as
 *   Placement's merge does, in the same pass (rules/capacity.ts canTakeSql):
 *   per class the smallest amount against min_unit, their sum against
 *   max_unit and capacity, and their gcd against step_size.
 * - member_of is a condition `id = ANY(ARRAY(members))`, not a semi-join: the
 *   generic plan then reads the members' inventories by index instead of
 *   every inventory. Traits stay semi-joins: they usually match half the
 *   cloud, where a hash join is cheaper than an index probe per member.
 * - The in_tree lookup is guarded by its list being non-empty: the generic
 *   plan reads resource_providers whole for `uuid = ANY(...)` (it assumes ten
 *   uuids), which for a small answer cost more than every other name lookup
 *   together; the guard makes the scan a one-time filter.
 * - Each candidate's details key (provider-details.ts) is an aggregate of the
 *   same inventory rows, so no row of resource_providers is read.
 * - With a LIMIT the aggregation walks providers in order and stops early.
 *   Without one the text has no LIMIT clause at all, so it is another
 *   prepared statement: bound to NULL, a LIMIT parameter still made the
 *   generic plan walk in order through merge joins rather than hash. A limit
 *   at least the number of providers (PostgreSQL's estimate) is left to a
 *   slice for the same reason.
 * The generic plan is an Append of the names CTE scan and a GroupAggregate
 * (or, with trait filters, a HashAggregate over hash semi and anti joins)
 * over inventories under a one-time filter "the cloud is flat"; trait and
 * aggregate filters join under the aggregate, so filtered-out providers are
 * never aggregated.
 * Rows: `k` 'c' (every resource class), 't'/'a' (a name asked for and its
 * id), 'n' (some provider has a parent), 's' (some provider shares), 'r' (an
 * in_tree provider and its root), 'e' (PostgreSQL's estimate of the number of
 * providers), and one 'x' row: the number of candidates and all of them as
 * one text, "id count version[ classId used ...]" per candidate (its id,
 * details key and non-zero usage), comma-separated in id order. One value
 * instead of a row per candidate: on the server, pg's handling of each row
 * (message, array, a parser per field) cost more than scanning one string,
 * and the scan reads numbers without making a string or a Map for each.
 */
import type pg from "pg";
import type { Db } from "../../db/database.js";
import { statementNameOf } from "../../db/prepared.js";
import type { CandidatesQuery, RequestGroup } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import { canTakeSql } from "../rules/capacity.js";
import { amongMembersSql, expressionSql } from "../rules/memberships.js";
import { inTreeSql, rootTraitExpression } from "../rules/trees.js";
import { shuffle } from "./combine.js";
import { isFlat, readShapeRow, SHAPE_ROWS, SHARING_TRAIT } from "./cloud-shape.js";
import { DETAILS_KEY_SQL, type ProviderDetails, type ProviderDetailsCache, type Runner } from "./provider-details.js";
import type { IdsByName } from "./sql.js";

export interface FlatAnchor {
  /** The kept object itself (the same object until the provider changes), so renderers can key on it. */
  details: ProviderDetails;
  /** Non-zero usage as [classId, used, classId, used, ...]; classes without usage are absent (undefined when the provider has none). */
  used: readonly number[] | undefined;
}

export interface FlatAnswer {
  /** The request's names; when the cloud turns out not flat (see cloud-shape.ts), nothing else. */
  names: IdsByName;
  anchors: FlatAnchor[];
  /** Every resource class id to its name (the summaries name classes nobody asked for). */
  classNames: Map<number, string>;
}

/** Whether the one statement can answer this request on a flat cloud (otherwise the engine does). */
export function statementTakes(query: CandidatesQuery): boolean {
  // Resourceless groups are rare: the engine handles them.
  return !query.groups.some((g) => g.resources.size === 0);
}

/** Per requested class: smallest amount, sum, gcd (see the header). */
function classRequests(groups: RequestGroup[]): Map<string, { lo: number; total: number; g: number }> {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const out = new Map<string, { lo: number; total: number; g: number }>();
  for (const g of groups) {
    for (const [rc, amount] of g.resources) {
      const r = out.get(rc);
      if (!r) out.set(rc, { lo: amount, total: amount, g: amount });
      else out.set(rc, { lo: Math.min(r.lo, amount), total: r.total + amount, g: gcd(r.g, amount) });
    }
  }
  return out;
}

/**
 * drizzle's handle made by drizzle(pool) carries the pool as `$client` (its
 * Db type does not say so); named statements and array rows need pg itself.
 */
function poolOf(db: Db): pg.Pool {
  const pool = (db as unknown as { $client?: pg.Pool }).$client;
  if (!pool?.query) throw new Error("the database handle has no pg pool");
  return pool;
}

/** What the statement keeps between requests (one per service, so per app). */
export interface FlatStatementState {
  details: ProviderDetailsCache;
  /** PostgreSQL's estimate of the number of providers, as the last statement saw it. */
  providerEstimate?: number;
  /** Prepared per connection under a name (false behind a transaction pooler: planned at every request). */
  namedStatements: boolean;
  /** Each statement text seen to its name (statementNameOf). */
  names: Map<string, string>;
}

/** Distinct statement texts kept named: request shapes are few, but a client can make many. */
const NAMED_TEXTS = 512;

/**
 * The flat answer to `query`, at most `limit` candidates: the first in id
 * order, or with `randomize` a random sample of them in random order.
 */
export async function flatCandidates(
  db: Db,
  state: FlatStatementState,
  query: CandidatesQuery,
  { limit, randomize }: { limit: number | undefined; randomize: boolean },
): Promise<FlatAnswer> {
  // A limit of at least every provider (as PostgreSQL last estimated them) limits nothing: leave it to
  // the slice below, so the statement is the hashing one rather than a walk in order that stops early,
  // which costs more when it must walk everything anyway. An estimate that lags a growing cloud costs only time.
  const estimate = state.providerEstimate;
  // A random sample is drawn from every candidate.
  const sqlLimit = randomize || (limit !== undefined && estimate !== undefined && estimate >= 0 && limit >= estimate) ? undefined : limit;
  const { groups, params } = query;
  const values: unknown[] = [];
  const p = (v: unknown) => `$${values.push(v)}`;
  const ids = (kind: "t" | "a", names: Iterable<string>) => `ARRAY(SELECT id FROM names WHERE k = '${kind}' AND s = ANY(${p([...names])}::text[]))`;
  const ID = "inv.resource_provider_id";

  const traitNames = unique([...params.rootRequired, ...params.rootForbidden, ...groups.flatMap((g) => [...g.traits.required.flat(), ...g.traits.forbidden]), SHARING_TRAIT]);
  const aggUuids = unique(groups.flatMap((g) => [...g.aggregates.memberOf.flat(), ...g.aggregates.forbidden]));
  const inTreeUuids = unique(groups.flatMap((g) => (g.inTree ? [g.inTree] : [])));
  const requests = classRequests(groups);

  const conditions: string[] = [];
  // Names are looked up by the statement itself (ids), so each list is an ARRAY over the names rows.
  const traitFilter = (anyOf: string[][], forbidden: Iterable<string>) =>
    conditions.push(...expressionSql("traits", ID, { anyOf, forbidden: [...forbidden] }, (list) => ids("t", list)));
  for (const g of groups) {
    traitFilter(g.traits.required, g.traits.forbidden);
    for (const anyOf of g.aggregates.memberOf) conditions.push(amongMembersSql("aggregates", ID, ids("a", anyOf)));
    conditions.push(...expressionSql("aggregates", ID, { anyOf: [], forbidden: [...g.aggregates.forbidden] }, (list) => ids("a", list)));
    // A flat provider is its own root.
    if (g.inTree) conditions.push(inTreeSql(ID, `(SELECT id FROM names WHERE k = 'r' AND s = ${p(g.inTree)}::text)`));
  }
  // A flat provider is its own root.
  const root = rootTraitExpression(params.rootRequired, params.rootForbidden);
  traitFilter(root.anyOf, root.forbidden);
  // Two granular groups can never be isolated on a tree of one provider: the names are still looked up.
  if (params.groupPolicy === "isolate" && groups.filter((g) => g.useSameProvider).length > 1) conditions.push("false");

  // The names' parameters come first so the text reads in order; the rest were pushed above.
  const head = [p(traitNames), p(aggUuids), p(inTreeUuids)];
  const req = [p([...requests.keys()]), p([...requests.values()].map((r) => r.lo)), p([...requests.values()].map((r) => r.total)), p([...requests.values()].map((r) => r.g))];
  const text = `WITH names AS MATERIALIZED (
      SELECT 'c' AS k, id, name::text AS s FROM resource_classes
      UNION ALL SELECT 't', id, name::text FROM traits WHERE name = ANY(${head[0]}::varchar[])
      UNION ALL SELECT 'a', id, uuid::text FROM aggregates WHERE uuid = ANY(${head[1]}::varchar[])
      UNION ALL ${SHAPE_ROWS}
      UNION ALL SELECT 'r', root_provider_id, uuid::text FROM resource_providers
        WHERE cardinality(${head[2]}::varchar[]) > 0 AND uuid = ANY(${head[2]}::varchar[])
      UNION ALL SELECT 'e', reltuples::int, '' FROM pg_class WHERE oid = 'resource_providers'::regclass
    ), req AS MATERIALIZED (
      SELECT rc.id, x.lo, x.total, x.g
      FROM unnest(${req[0]}::text[], ${req[1]}::int[], ${req[2]}::int[], ${req[3]}::int[]) AS x(name, lo, total, g)
      JOIN resource_classes rc ON rc.name = x.name
    ), anchor AS (
      SELECT ${ID} AS id, ${DETAILS_KEY_SQL("inv")} AS key,
             string_agg(inv.resource_class_id || ' ' || inv.used, ' ') FILTER (WHERE inv.used > 0) AS used
      FROM inventories inv
      LEFT JOIN req r ON r.id = inv.resource_class_id AND ${canTakeSql("inv", { smallest: "r.lo", sum: "r.total", gcd: "r.g" })}
      WHERE NOT EXISTS (SELECT 1 FROM names WHERE k IN ('n', 's'))
        ${conditions.map((c) => `AND ${c}`).join("\n        ")}
      GROUP BY ${ID}
      HAVING count(r.id) >= ${p(requests.size)}::int
      ORDER BY ${ID}${sqlLimit === undefined ? "" : ` LIMIT ${p(sqlLimit)}::bigint`}
    )
    SELECT k, id, s FROM names
    UNION ALL
    SELECT 'x', count(*)::int, string_agg(a.id || ' ' || a.key || coalesce(' ' || a.used, ''), ',' ORDER BY a.id) FROM anchor a`;
  // One prepared statement per request shape and connection; the name is the text's hash.
  const name = state.namedStatements ? statementNameOf(state.names, text, "ac_flat_", NAMED_TEXTS) : undefined;
  const statement = { name, text, values, rowMode: "array" as const };
  const answer = async (run: Runner): Promise<FlatAnswer | undefined> => {
    const result = await run.query<unknown[]>(statement);
    const { names, classNames, rows, providerEstimate } = readRows(result.rows);
    if (providerEstimate !== undefined) state.providerEstimate = providerEstimate;
    if (!isFlat(names)) return { names, anchors: [], classNames };
    // An unknown in_tree provider means no candidates at all, whichever group names it.
    if (inTreeUuids.some((u) => !names.treeRoots.has(u))) rows.length = 0;
    if (randomize) shuffle(rows);
    if (limit !== undefined && rows.length > limit) rows.length = limit;
    const details = await state.details.resolve(run, rows);
    if (!details) return undefined;
    const anchors = rows.map((r, i) => ({ details: details[i], used: r.used }));
    return { names, anchors, classNames };
  };
  const pool = poolOf(db);
  const first = await answer(pool);
  if (first) return first;
  // A candidate changed between the statement and the read of its details: both again, in one snapshot.
  const client = await pool.connect();
  try {
    await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    const again = await answer(client);
    await client.query("COMMIT");
    if (!again) throw new Error("provider details changed inside one snapshot");
    return again;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** The statement's rows: names, the providers estimate, and each candidate's id, details key and usage. */
function readRows(rows: unknown[][]) {
  const names: IdsByName = { resourceClasses: new Map(), traits: new Map(), aggregates: new Map(), treeRoots: new Map(), hasTrees: false, hasSharing: false };
  const classNames = new Map<number, string>();
  let candidates: FlatRow[] = [];
  let providerEstimate: number | undefined;
  for (const row of rows) {
    const k = row[0] as string;
    if (k === "x") candidates = readCandidates(row[2] as string | null, row[1] as number);
    else if (k === "c") {
      names.resourceClasses.set(row[2] as string, row[1] as number);
      classNames.set(row[1] as number, row[2] as string);
    }
    else if (k === "t") names.traits.set(row[2] as string, row[1] as number);
    else if (k === "a") names.aggregates.set(row[2] as string, row[1] as number);
    else if (k === "r") names.treeRoots.set(row[2] as string, row[1] as number);
    else if (k === "e") providerEstimate = row[1] as number;
    else readShapeRow(k, names);
  }
  return { names, classNames, rows: candidates, providerEstimate };
}

interface FlatRow {
  id: number;
  key: string;
  used: number[] | undefined;
}

const SPACE = 32;
const COMMA_CODE = 44;

/**
 * The 'x' row's text (see the header): "id count version[ classId used ...]"
 * per candidate, comma-separated; every number a non-negative integer. The
 * key is the text of "count version" as DETAILS_KEY_SQL writes it.
 */
export function readCandidates(text: string | null, count: number): FlatRow[] {
  if (text === null || count === 0) return [];
  const out: FlatRow[] = new Array(count);
  const n = text.length;
  let i = 0;
  // Reads the integer at i, leaving i on the character after it.
  const int = (): number => {
    let v = 0;
    for (let c = text.charCodeAt(i); c >= 48 && c <= 57; c = text.charCodeAt(++i)) v = v * 10 + (c - 48);
    return v;
  };
  // Steps over the space that must come next.
  const space = () => {
    if (text.charCodeAt(i++) !== SPACE) throw new Error(`unexpected candidates text at ${i - 1}`);
  };
  for (let k = 0; k < count; k++) {
    if (i >= n) throw new Error("candidates text shorter than its count");
    const id = int();
    space();
    const keyStart = i;
    int();
    space();
    int();
    const key = text.slice(keyStart, i);
    let used: number[] | undefined;
    while (i < n && text.charCodeAt(i) === SPACE) {
      i++;
      const classId = int();
      space();
      (used ??= []).push(classId, int());
    }
    if (i < n && text.charCodeAt(i) !== COMMA_CODE) throw new Error(`unexpected candidates text at ${i}`);
    i++;
    out[k] = { id, key, used };
  }
  if (i < n) throw new Error("candidates text longer than its count");
  return out;
}
