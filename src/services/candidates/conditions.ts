/**
 * Provider filters as SQL conditions on a provider id column (the rules of
 * ../rules/, wrapped for drizzle), shared by GET /resource_providers and the
 * engine's flat source.
 * Each is a semi-join (or anti-join) PostgreSQL answers from the trait,
 * aggregate and inventory indexes, and, driven by the primary key
 * in id order under a LIMIT, stops as soon as enough providers matched.
 */
import { sql, type SQL } from "drizzle-orm";
import { canTakeOneSql } from "../rules/capacity.js";
import { expressionSql, idsSql, type MembershipExpression } from "../rules/memberships.js";

/** Has the traits of the expression (rules/memberships.ts), over the provider id column `idSql`. */
export function traitConditions(idSql: string, e: MembershipExpression): SQL[] {
  return expressionSql("traits", idSql, e, idsSql).map((c) => sql.raw(c));
}

/** Is in the aggregates of the expression (rules/memberships.ts), over the provider id column `idSql`. */
export function aggregateConditions(idSql: string, e: MembershipExpression): SQL[] {
  return expressionSql("aggregates", idSql, e, idsSql).map((c) => sql.raw(c));
}

/**
 * Can take `amount` more of the class: free capacity net of what is allocated
 * (`inventories.used`, kept by triggers), and min_unit, max_unit and
 * step_size, as Placement checks them.
 */
export function capacityCondition(idSql: string, resourceClassId: number, amount: number): SQL {
  return sql`EXISTS (
    SELECT 1 FROM inventories inv, (SELECT ${amount}::int AS amount) r
    WHERE inv.resource_provider_id = ${sql.raw(idSql)} AND inv.resource_class_id = ${resourceClassId} AND ${sql.raw(canTakeOneSql("inv", "r.amount"))})`;
}

/**
 * Can take every (class, amount) of `requests` (pairs may repeat a class): one
 * correlated count per provider instead of one EXISTS per class. PostgreSQL
 * cannot turn a count into a semi-join, so a scan of resource_providers in id
 * order under a LIMIT evaluates it provider by provider (three index probes of
 * inventories_provider_class_unique for three classes) and stops at the limit,
 * where the EXISTS form becomes hash semi-joins over every inventory of each
 * class, which costs more when the limit is met early.
 */
export function capacityForAll(idSql: string, requests: Array<{ resourceClassId: number; amount: number }>): SQL {
  const rcs = requests.map((r) => r.resourceClassId);
  const amounts = requests.map((r) => r.amount);
  return sql`(SELECT count(*) FROM inventories inv
              JOIN unnest(${sql.param(rcs)}::int[], ${sql.param(amounts)}::int[]) AS r(rc, amount) ON inv.resource_class_id = r.rc
              WHERE inv.resource_provider_id = ${sql.raw(idSql)} AND ${sql.raw(canTakeOneSql("inv", "r.amount"))}) = ${requests.length}`;
}
