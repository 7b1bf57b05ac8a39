/**
 * The filters GET /resource_providers shares with allocation candidates
 * (required/forbidden traits, member_of, resources capacity) as SQL
 * conditions on `resource_providers.id`, so the list stays one query.
 */
import type { SQL } from "drizzle-orm";
import type { Queryable } from "../db/database.js";
import type { ProviderListFilters } from "../query/provider-filters.js";
import { unique } from "../query/values.js";
import { aggregateConditions, capacityCondition, traitConditions } from "./candidates/conditions.js";
import { lookupNames } from "./candidates/sql/names.js";
import { ClassNotFound, TraitNotFound } from "./errors.js";

const RP_ID = "resource_providers.id";

export async function providerFilterConditions(q: Queryable, filters: ProviderListFilters): Promise<SQL[]> {
  const traitNames = filters.traits ? unique([...filters.traits.required.flat(), ...filters.traits.forbidden]) : [];
  const aggUuids = filters.aggregates ? unique([...filters.aggregates.memberOf.flat(), ...filters.aggregates.forbidden]) : [];
  const classes = filters.resources ? [...filters.resources.keys()] : [];
  if (traitNames.length === 0 && aggUuids.length === 0 && classes.length === 0) return [];
  const names = await lookupNames(q, classes, traitNames, aggUuids);

  const conditions: SQL[] = [];
  if (filters.traits) {
    const missing = traitNames.filter((n) => !names.traits.has(n));
    if (missing.length > 0) throw new TraitNotFound(missing, "required");
    const id = (t: string) => names.traits.get(t)!;
    conditions.push(...traitConditions(RP_ID, { anyOf: filters.traits.required.map((l) => l.map(id)), forbidden: [...filters.traits.forbidden].map(id) }));
  }
  if (filters.aggregates) {
    // Unknown aggregates match nothing: a list of only unknown ones filters everything out, as in Placement.
    const ids = (uuids: Iterable<string>) => [...uuids].map((u) => names.aggregates.get(u)).filter((a): a is number => a !== undefined);
    conditions.push(...aggregateConditions(RP_ID, { anyOf: filters.aggregates.memberOf.map(ids), forbidden: ids(filters.aggregates.forbidden) }));
  }
  for (const [name, amount] of filters.resources ?? []) {
    const rc = names.resourceClasses.get(name);
    if (rc === undefined) throw new ClassNotFound(name, { in: "query" });
    conditions.push(capacityCondition(RP_ID, rc, amount));
  }
  return conditions;
}
