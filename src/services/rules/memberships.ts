/**
 * Trait expressions, written once: a provider (or the providers of one
 * choice together) must have, for every any-of list of `required`, at least
 * one of its traits (a plain required trait is a list of one; `in:` gives a
 * longer list), and none of `forbidden`. Aggregate expressions (member_of,
 * `in:`, `!`) are the same shape over aggregates (aggregates.ts).
 *
 * In memory over a provider's set of ids, and as SQL conditions on a
 * provider id column: each any-of list one EXISTS over the link table, the
 * forbidden ones one NOT EXISTS, which PostgreSQL answers from the link
 * table's indexes as semi- and anti-joins. The SQL takes each list as an SQL
 * expression (listSql), so a statement may give ids as literals or look them
 * up by name in SQL itself.
 */

export interface MembershipExpression<T = number> {
  /** Every inner list: at least one of its members. */
  anyOf: T[][];
  /** None of these. */
  forbidden: T[];
}

export const isEmptyExpression = (e: MembershipExpression<unknown>): boolean => e.anyOf.length === 0 && e.forbidden.length === 0;

/** Whether a provider with the members `has` meets the expression. */
export function allows(has: ReadonlySet<number> | undefined, e: MembershipExpression): boolean {
  // Loops, not every/some with arrows: the planner asks this for every provider of a batch, and each
  // arrow closing over `has` was an allocation per call.
  for (const f of e.forbidden) if (has?.has(f)) return false;
  for (const list of e.anyOf) {
    let found = false;
    for (const m of list) if (has?.has(m)) found = true;
    if (!found) return false;
  }
  return true;
}

/**
 * Whether providers chosen together (one candidate's providers in a tree)
 * meet the expression with their members combined: a required trait may come
 * from any of them, a forbidden one from none.
 */
export function allowTogether(providers: Iterable<number>, membersOf: (providerId: number) => ReadonlySet<number> | undefined, e: MembershipExpression): boolean {
  const all = new Set<number>();
  for (const p of providers) {
    const members = membersOf(p);
    if (!members) continue;
    for (const m of members) {
      if (e.forbidden.includes(m)) return false;
      all.add(m);
    }
  }
  return e.anyOf.every((list) => list.some((m) => all.has(m)));
}

/** The link tables a membership lives in; constants of this module, never input. */
const LINKS = {
  traits: { table: "resource_provider_traits", column: "trait_id" },
  aggregates: { table: "resource_provider_aggregates", column: "aggregate_id" },
} as const;

export type Link = keyof typeof LINKS;

/** SQL: the provider `idSql` has one of the members `listSql` (an int[] expression) in the link table. */
export function memberSql(link: Link, idSql: string, listSql: string): string {
  const { table, column } = LINKS[link];
  return `EXISTS (SELECT 1 FROM ${table} m WHERE m.resource_provider_id = ${idSql} AND m.${column} = ANY(${listSql}))`;
}

/** SQL conditions (to AND together) for the expression over the provider id column `idSql`. */
export function expressionSql<T>(link: Link, idSql: string, e: MembershipExpression<T>, listSql: (members: T[]) => string): string[] {
  const out = e.anyOf.map((list) => memberSql(link, idSql, listSql(list)));
  if (e.forbidden.length > 0) out.push(`NOT ${memberSql(link, idSql, listSql(e.forbidden))}`);
  return out;
}

/** A list of ids as an SQL int[] literal (ids come from the database: integers, checked). */
export function idsSql(ids: number[]): string {
  for (const id of ids) if (!Number.isSafeInteger(id)) throw new Error(`not an id: ${id}`);
  return `ARRAY[${ids.join(",")}]::int[]`;
}
