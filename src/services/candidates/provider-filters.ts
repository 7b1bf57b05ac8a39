/**
 * The filters GET /resource_providers shares with allocation candidates
 * (required/forbidden traits, member_of, resources capacity) as SQL
 * conditions on `resource_providers.id`, so the list stays one query. Each is
 * a semi-join PostgreSQL runs as a hash (anti-)join over the trait, aggregate
 * or inventory index for just the named traits, aggregates or classes.
 */
import { sql, type SQL } from "drizzle-orm";
import type { Queryable } from "../../db/database.js";
import { badRequest } from "../../http/errors.js";
import type { ProviderListFilters } from "../../query/provider-filters.js";
import { unique } from "../../query/values.js";
import { resourceClassIds, traitIds } from "./sql.js";

const RP_ID = sql.raw("resource_providers.id");

export async function providerFilterConditions(q: Queryable, filters: ProviderListFilters): Promise<SQL[]> {
  const conditions: SQL[] = [];
  if (filters.traits) {
    const names = unique([...filters.traits.required.flat(), ...filters.traits.forbidden]);
    const ids = await traitIds(q, names);
    const missing = names.filter((n) => !ids.has(n));
    if (missing.length > 0) throw badRequest(`Invalid trait(s) in "required" parameter: No such trait(s): ${missing.join(", ")}.`);
    for (const anyOf of filters.traits.required) {
      const set = anyOf.map((t) => ids.get(t)!);
      conditions.push(
        sql`${RP_ID} IN (SELECT resource_provider_id FROM resource_provider_traits WHERE trait_id = ANY(${sql.param(set)}::int[]))`,
      );
    }
    if (filters.traits.forbidden.size > 0) {
      const set = [...filters.traits.forbidden].map((t) => ids.get(t)!);
      conditions.push(
        sql`${RP_ID} NOT IN (SELECT resource_provider_id FROM resource_provider_traits WHERE trait_id = ANY(${sql.param(set)}::int[]))`,
      );
    }
  }
  if (filters.aggregates) {
    const inAggregates = (uuids: string[]) =>
      sql`(SELECT rpa.resource_provider_id FROM resource_provider_aggregates rpa JOIN aggregates a ON a.id = rpa.aggregate_id
           WHERE a.uuid = ANY(${sql.param(uuids)}::varchar[]))`;
    for (const anyOf of filters.aggregates.memberOf) conditions.push(sql`${RP_ID} IN ${inAggregates(anyOf)}`);
    if (filters.aggregates.forbidden.size > 0) conditions.push(sql`${RP_ID} NOT IN ${inAggregates([...filters.aggregates.forbidden])}`);
  }
  if (filters.resources) {
    const ids = await resourceClassIds(q, [...filters.resources.keys()]);
    for (const [name, amount] of filters.resources) {
      const rc = ids.get(name);
      if (rc === undefined) throw badRequest(`Invalid resource class in resources parameter: No such resource class ${name}.`);
      // Free capacity net of what `allocations` already uses, plus the unit rules, as for candidates.
      conditions.push(sql`${RP_ID} IN (
        SELECT inv.resource_provider_id FROM inventories inv
        WHERE inv.resource_class_id = ${rc}
          AND coalesce((SELECT sum(a.used) FROM allocations a
                        WHERE a.resource_provider_id = inv.resource_provider_id AND a.resource_class_id = inv.resource_class_id), 0)
              + ${amount} <= (inv.total - inv.reserved) * inv.allocation_ratio
          AND inv.min_unit <= ${amount} AND inv.max_unit >= ${amount} AND ${amount} % inv.step_size = 0)`);
    }
  }
  return conditions;
}
