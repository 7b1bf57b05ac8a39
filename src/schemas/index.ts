/**
 * Every request schema of the API, by operation: "METHOD /path/{param}" (the
 * form Placement's policy documentation and auth/policy-defaults.ts use) to
 * the versioned tables of what the request carries:
 *   body   the JSON body, validated by http/validation.ts's validateBody
 *   query  the query string's last-value dictionary, by query/query-string.ts's validateQuery
 *   path   the path parameters as an object, where a route checks them with a schema
 * Each table (schemas/versioned.ts) lists which schema applies from which
 * microversion and, with `until`, from which version the part is gone; an
 * operation or part not listed takes nothing to validate. Routes take the
 * same table objects from the per-resource modules, so this list is what
 * they validate against; test/schemas/registry.test.ts checks that every
 * operation named here is a real one and that each route answers a bad body
 * with its table's message.
 */
import { PUT_AGGREGATES } from "./aggregates.js";
import { CANDIDATES_QUERY } from "./allocation-candidates.js";
import { POST_ALLOCATIONS, PUT_ALLOCATIONS } from "./allocations.js";
import { CHANGES_QUERY } from "./changes.js";
import { POST_CLAIMS } from "./claims.js";
import { POST_INVENTORY, PUT_INVENTORIES, PUT_INVENTORY } from "./inventories.js";
import { POST_RESHAPER } from "./reshaper.js";
import { POST_RESOURCE_CLASS, PUT_RESOURCE_CLASS, RESOURCE_CLASS_PATH } from "./resource-classes.js";
import { LIST_PROVIDERS_QUERY, POST_PROVIDER, PUT_PROVIDER } from "./resource-providers.js";
import { LIST_TRAITS_QUERY, PUT_PROVIDER_TRAITS, TRAIT_PATH } from "./traits.js";
import { USAGES_QUERY } from "./usages.js";
import type { Versioned } from "./versioned.js";

export type { Versioned, VersionedEntry } from "./versioned.js";

export interface OperationSchemas {
  body?: Versioned;
  query?: Versioned;
  path?: Versioned;
}

export const OPERATION_SCHEMAS: Readonly<Record<string, OperationSchemas>> = {
  "GET /resource_providers": { query: LIST_PROVIDERS_QUERY },
  "POST /resource_providers": { body: POST_PROVIDER },
  "PUT /resource_providers/{uuid}": { body: PUT_PROVIDER },
  "PUT /resource_providers/{uuid}/aggregates": { body: PUT_AGGREGATES },
  "POST /resource_providers/{uuid}/inventories": { body: POST_INVENTORY },
  "PUT /resource_providers/{uuid}/inventories": { body: PUT_INVENTORIES },
  "PUT /resource_providers/{uuid}/inventories/{resource_class}": { body: PUT_INVENTORY },
  "PUT /resource_providers/{uuid}/traits": { body: PUT_PROVIDER_TRAITS },
  "POST /resource_classes": { body: POST_RESOURCE_CLASS },
  "PUT /resource_classes/{name}": { body: PUT_RESOURCE_CLASS, path: RESOURCE_CLASS_PATH },
  "GET /traits": { query: LIST_TRAITS_QUERY },
  "PUT /traits/{name}": { path: TRAIT_PATH },
  "PUT /allocations/{consumer_uuid}": { body: PUT_ALLOCATIONS },
  "POST /allocations": { body: POST_ALLOCATIONS },
  "POST /reshaper": { body: POST_RESHAPER },
  "GET /allocation_candidates": { query: CANDIDATES_QUERY },
  "GET /allocation_candidates/explain": { query: CANDIDATES_QUERY },
  "POST /claims": { body: POST_CLAIMS, query: CANDIDATES_QUERY },
  "GET /usages": { query: USAGES_QUERY },
  "GET /changes": { query: CHANGES_QUERY },
};
