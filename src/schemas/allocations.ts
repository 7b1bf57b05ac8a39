/**
 * Request bodies of the allocation writes, one schema per microversion, each
 * built from the previous one as Placement's schemas/allocation.py does, so
 * the change at each version is visible. POST /reshaper reuses the POST
 * forms (schemas/reshaper.ts).
 */
import { z } from "zod";
import { CONSUMER_TYPE, DASHED_UUID, EXTERNAL_ID, GENERATION, minProperties, RESOURCE_CLASS_NAME, UUID_KEY, zInteger, zNullableInteger } from "./common.js";
import { versioned } from "./versioned.js";

const MAPPING_SUFFIX = z.string().regex(/^[a-zA-Z0-9_-]{0,64}$/);
const RESOURCES = minProperties(z.record(RESOURCE_CLASS_NAME, zInteger({ min: 1 })), 1);

/** 1.0 - 1.7: a list of {resource_provider: {uuid}, resources}. */
export const PUT_ALLOCATIONS_V1_0 = z.strictObject({
  allocations: z
    .array(
      z.strictObject({
        resource_provider: z.strictObject({ uuid: DASHED_UUID }),
        resources: RESOURCES,
      }),
    )
    .min(1),
});

/** 1.8: project_id and user_id become required. */
export const PUT_ALLOCATIONS_V1_8 = PUT_ALLOCATIONS_V1_0.extend({ project_id: EXTERNAL_ID, user_id: EXTERNAL_ID });

/** Provider uuid to {resources, optional generation}: the shape GET returns, so it can be sent back. */
const ALLOCATIONS_DICT = z.record(UUID_KEY, z.strictObject({ generation: GENERATION.optional(), resources: RESOURCES }));

/** 1.12: allocations keyed by provider uuid. */
export const PUT_ALLOCATIONS_V1_12 = z.strictObject({
  allocations: minProperties(ALLOCATIONS_DICT, 1),
  project_id: EXTERNAL_ID,
  user_id: EXTERNAL_ID,
});

/** POST /allocations allows empty allocations (they remove the consumer's). */
const DELETABLE_ALLOCATIONS = PUT_ALLOCATIONS_V1_12.extend({ allocations: ALLOCATIONS_DICT });

/** 1.28: consumer_generation is required (null for a new consumer); PUT may now send empty allocations. */
export const PUT_ALLOCATIONS_V1_28 = DELETABLE_ALLOCATIONS.extend({ consumer_generation: zNullableInteger() });

/** 1.34: the mappings of an allocation candidate may be sent back (accepted, not stored, as in Placement). */
export const PUT_ALLOCATIONS_V1_34 = PUT_ALLOCATIONS_V1_28.extend({
  mappings: minProperties(z.record(MAPPING_SUFFIX, z.array(DASHED_UUID).min(1)), 1).optional(),
});

/** 1.38: consumer_type is required. */
export const PUT_ALLOCATIONS_V1_38 = PUT_ALLOCATIONS_V1_34.extend({ consumer_type: CONSUMER_TYPE });

/**
 * From 1.12 Placement's allocation schemas list additionalProperties before
 * required, and jsonschema's best_match reports the first of two complaints
 * about one object: a body with both an unexpected and a missing property is
 * refused for the unexpected one. zod reports unknown keys last, so these
 * objects have them checked first (a preprocess step, so that the object is
 * still what a JSON Schema generator sees).
 */
function extrasFirst<S extends z.ZodObject>(schema: S): S {
  const known = new Set(Object.keys(schema.shape));
  return z.preprocess((v, ctx) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      const keys = Object.keys(v).filter((k) => !known.has(k));
      if (keys.length) ctx.issues.push({ code: "unrecognized_keys", keys, input: v, path: [] } as unknown as (typeof ctx.issues)[number]);
    }
    return v;
  }, schema) as unknown as S;
}

/** PUT /allocations/{consumer_uuid}. */
export const PUT_ALLOCATIONS = versioned([
  { from: "1.0", schema: PUT_ALLOCATIONS_V1_0 },
  { from: "1.8", schema: PUT_ALLOCATIONS_V1_8 },
  { from: "1.12", schema: extrasFirst(PUT_ALLOCATIONS_V1_12) },
  { from: "1.28", schema: extrasFirst(PUT_ALLOCATIONS_V1_28) },
  { from: "1.34", schema: extrasFirst(PUT_ALLOCATIONS_V1_34) },
  { from: "1.38", schema: extrasFirst(PUT_ALLOCATIONS_V1_38) },
]);

/** Consumer uuid to that consumer's PUT body (1.12 and later, so extras first); `min` consumers at least. */
export const byConsumer = <S extends z.ZodObject>(perConsumer: S, min: number) => minProperties(z.record(UUID_KEY, extrasFirst(perConsumer)), min);

/** POST /allocations (1.13): several consumers' bodies at once. */
export const POST_ALLOCATIONS = versioned([
  { from: "1.13", schema: byConsumer(DELETABLE_ALLOCATIONS, 1) },
  { from: "1.28", schema: byConsumer(PUT_ALLOCATIONS_V1_28, 1) },
  { from: "1.34", schema: byConsumer(PUT_ALLOCATIONS_V1_34, 1) },
  { from: "1.38", schema: byConsumer(PUT_ALLOCATIONS_V1_38, 1) },
]);

/** What every version's per-consumer body has in common after parsing. */
export interface ParsedConsumerBody {
  allocations: Record<string, { resources: Record<string, number> }>;
  project_id?: string;
  user_id?: string;
  consumer_generation?: number | null;
  consumer_type?: string;
}
