/**
 * The query string of GET /resource_providers: `name`, `uuid`, and the
 * filters it shares with allocation candidates (`member_of` 1.3, repeated
 * 1.24, `!` 1.32; `resources` 1.4; `in_tree` 1.14; `required` 1.18, `!` 1.22,
 * `in:` and repeated 1.39), validated against schemas/resource-providers.ts
 * and parsed by the same value parsers.
 */
import type { Microversion } from "../http/microversion.js";
import { LIST_PROVIDERS_QUERY } from "../schemas/resource-providers.js";
import { allValues, lastValues, validateQuery, type QueryPairs } from "./query-string.js";
import { parseMemberOfValues, parseResources, parseTraitValues, type AggregateFilter, type TraitFilter } from "./values.js";

export interface ProviderListFilters {
  name?: string;
  uuid?: string;
  inTree?: string;
  resources?: Map<string, number>;
  traits?: TraitFilter;
  aggregates?: AggregateFilter;
}

/** Validates and parses the whole query string of GET /resource_providers for microversion `mv`. */
export function parseProviderListQuery(pairs: QueryPairs, mv: Microversion): ProviderListFilters {
  validateQuery(LIST_PROVIDERS_QUERY.at(mv), pairs);
  const last = lastValues(pairs);
  const filters: ProviderListFilters = {};
  if ("member_of" in last) filters.aggregates = parseMemberOfValues(allValues(pairs, "member_of"), "", mv);
  if ("required" in last) filters.traits = parseTraitValues(allValues(pairs, "required"), mv);
  if ("uuid" in last) filters.uuid = last.uuid;
  if ("name" in last) filters.name = last.name;
  if ("in_tree" in last) filters.inTree = last.in_tree;
  if ("resources" in last) filters.resources = parseResources(last.resources);
  return filters;
}
