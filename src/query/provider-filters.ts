/**
 * The query string of GET /resource_providers: `name`, `uuid`, and the
 * filters it shares with allocation candidates (`member_of` 1.3, repeated
 * 1.24, `!` 1.32; `resources` 1.4; `in_tree` 1.14; `required` 1.18, `!` 1.22,
 * `in:` and repeated 1.39), parsed by the same value parsers.
 */
import { z } from "zod";
import type { Microversion } from "../http/microversion.js";
import { zUuid } from "../http/uuid.js";
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

const UUID = zUuid();

// Placement's GET_RPS_SCHEMA_* per microversion, each built from the previous one.
const V1_0 = z.strictObject({ name: z.string().optional(), uuid: UUID.optional() });
const V1_3 = V1_0.extend({ member_of: z.string().optional() });
const V1_4 = V1_3.extend({ resources: z.string().optional() });
const V1_14 = V1_4.extend({ in_tree: UUID.optional() });
const V1_18 = V1_14.extend({ required: z.string().optional() });

/** Which schema applies from which microversion (read by the OpenAPI document). */
export const PROVIDER_LIST_QUERIES = [
  ["1.0", V1_0],
  ["1.3", V1_3],
  ["1.4", V1_4],
  ["1.14", V1_14],
  ["1.18", V1_18],
] as const;

export function providerListSchema(mv: Microversion): z.ZodType {
  if (mv.atLeast("1.18")) return V1_18;
  if (mv.atLeast("1.14")) return V1_14;
  if (mv.atLeast("1.4")) return V1_4;
  if (mv.atLeast("1.3")) return V1_3;
  return V1_0;
}

/** Validates and parses the whole query string of GET /resource_providers for microversion `mv`. */
export function parseProviderListQuery(pairs: QueryPairs, mv: Microversion): ProviderListFilters {
  validateQuery(providerListSchema(mv), pairs);
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
