/**
 * /resource_providers bodies and the GET query, as Placement's
 * schemas/resource_provider.py: one schema per microversion, each built from
 * the previous one. The query's filter values (member_of, resources,
 * required) are parsed after validation by query/provider-filters.ts.
 */
import { z } from "zod";
import { zUuid } from "./common.js";
import { versioned } from "./versioned.js";

/** PostgreSQL cannot store NUL in text: refusing it here keeps such a name a 400, not a 500. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching NUL is the point.
const PROVIDER_NAME = z.string().max(200).regex(/^[^\u0000]*$/);

const POST_PROVIDER_V1_0 = z.strictObject({ name: PROVIDER_NAME, uuid: zUuid().optional() });
/** 1.14: a provider may be created under a parent. */
const POST_PROVIDER_V1_14 = POST_PROVIDER_V1_0.extend({ parent_provider_uuid: z.union([zUuid(), z.null()]).optional() });

/** POST /resource_providers. */
export const POST_PROVIDER = versioned([
  { from: "1.0", schema: POST_PROVIDER_V1_0 },
  { from: "1.14", schema: POST_PROVIDER_V1_14 },
]);

/** PUT /resource_providers/{uuid}: the POST body without the uuid; a parent from 1.14 (moved or un-parented from 1.37). */
export const PUT_PROVIDER = versioned([
  { from: "1.0", schema: POST_PROVIDER_V1_0.omit({ uuid: true }) },
  { from: "1.14", schema: POST_PROVIDER_V1_14.omit({ uuid: true }) },
]);

const UUID = zUuid();
// Placement's GET_RPS_SCHEMA_* per microversion, each built from the previous one.
const LIST_V1_0 = z.strictObject({ name: z.string().optional(), uuid: UUID.optional() });
const LIST_V1_3 = LIST_V1_0.extend({ member_of: z.string().optional() });
const LIST_V1_4 = LIST_V1_3.extend({ resources: z.string().optional() });
const LIST_V1_14 = LIST_V1_4.extend({ in_tree: UUID.optional() });
const LIST_V1_18 = LIST_V1_14.extend({ required: z.string().optional() });

/** GET /resource_providers query (repeated member_of 1.24, `!` 1.32, `in:` required 1.39 change values, not keys). */
export const LIST_PROVIDERS_QUERY = versioned([
  { from: "1.0", schema: LIST_V1_0 },
  { from: "1.3", schema: LIST_V1_3 },
  { from: "1.4", schema: LIST_V1_4 },
  { from: "1.14", schema: LIST_V1_14 },
  { from: "1.18", schema: LIST_V1_18 },
]);
