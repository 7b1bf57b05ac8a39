/**
 * Request bodies of the allocation writes, one schema per microversion, each
 * built from the previous one as Placement's schemas/allocation.py does, so
 * the change at each version is visible. Reshaper reuses the POST forms.
 */
import { z } from "zod";
import { pyRepr } from "../http/validation.js";

/** jsonschema's UUID_PATTERN for keys: 36 hex digits or dashes. */
export const UUID_KEY = z.string().regex(/^[0-9a-fA-F-]{36}$/);
const RESOURCE_CLASS_KEY = z.string().regex(/^[A-Z0-9_]+$/);
export const CONSUMER_TYPE = z.string().regex(/^[A-Z0-9_]+$/).min(1).max(255);
export const EXTERNAL_ID = z.string().min(1).max(255);
const MAPPING_SUFFIX = z.string().regex(/^[a-zA-Z0-9_-]{0,64}$/);

/** jsonschema's "format": "uuid": anything Python's uuid.UUID() parses, dashes where they belong. */
export const uuidFormat = z.string().check((ctx) => {
  const v = ctx.value;
  const dashed = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(v);
  if (!dashed) {
    ctx.issues.push({ code: "custom", input: v, message: `${pyRepr(v)} is not a 'uuid'`, params: { validator: "format" } });
  }
});

/** jsonschema's minProperties, with its wording ("{} does not have enough properties"). */
export function minProperties<S extends z.ZodType>(schema: S, min: number): S {
  return schema.check((ctx) => {
    const v = ctx.value;
    if (v && typeof v === "object" && Object.keys(v).length < min) {
      ctx.issues.push({ code: "custom", input: v, message: `${pyRepr(v)} does not have enough properties`, params: { validator: "minProperties" } });
    }
  }) as unknown as S;
}

const RESOURCES = minProperties(z.record(RESOURCE_CLASS_KEY, z.int().min(1)), 1);

/** 1.0 - 1.7: a list of {resource_provider: {uuid}, resources}. */
export const PUT_ALLOCATIONS_V1_0 = z.strictObject({
  allocations: z
    .array(
      z.strictObject({
        resource_provider: z.strictObject({ uuid: uuidFormat }),
        resources: RESOURCES,
      }),
    )
    .min(1),
});

/** 1.8: project_id and user_id become required. */
export const PUT_ALLOCATIONS_V1_8 = PUT_ALLOCATIONS_V1_0.extend({ project_id: EXTERNAL_ID, user_id: EXTERNAL_ID });

/** Provider uuid to {resources, optional generation}: the shape GET returns, so it can be sent back. */
const ALLOCATIONS_DICT = z.record(UUID_KEY, z.strictObject({ generation: z.int().optional(), resources: RESOURCES }));

/**
 * From 1.12 Placement's allocation schemas list additionalProperties before
 * required, and jsonschema's best_match reports the first of two complaints
 * about one object: a body with both an unexpected and a missing property is
 * refused for the unexpected one. zod reports unknown keys last, so these
 * objects check them first.
 */
function extrasFirst<S extends z.ZodObject>(schema: S): S {
  const known = new Set(Object.keys(schema.shape));
  const checked = z.unknown().check((ctx) => {
    const v = ctx.value;
    if (!v || typeof v !== "object" || Array.isArray(v)) return;
    const keys = Object.keys(v).filter((k) => !known.has(k));
    if (keys.length) ctx.issues.push({ code: "unrecognized_keys", keys, input: v, path: [] } as unknown as (typeof ctx.issues)[number]);
  });
  return checked.pipe(schema) as unknown as S;
}

/** 1.12: allocations keyed by provider uuid. */
const V1_12 = z.strictObject({
  allocations: minProperties(ALLOCATIONS_DICT, 1),
  project_id: EXTERNAL_ID,
  user_id: EXTERNAL_ID,
});

/** POST /allocations allows empty allocations (they remove the consumer's). */
const DELETABLE_ALLOCATIONS = V1_12.extend({ allocations: ALLOCATIONS_DICT });

/** 1.28: consumer_generation is required (null for a new consumer); PUT may now send empty allocations. */
const V1_28 = DELETABLE_ALLOCATIONS.extend({ consumer_generation: z.int().nullable() });

/** 1.34: the mappings of an allocation candidate may be sent back (accepted, not stored, as in Placement). */
const V1_34 = V1_28.extend({
  mappings: minProperties(z.record(MAPPING_SUFFIX, z.array(uuidFormat).min(1)), 1).optional(),
});

/** 1.38: consumer_type is required. */
const V1_38 = V1_34.extend({ consumer_type: CONSUMER_TYPE });

export const PUT_ALLOCATIONS_V1_12 = extrasFirst(V1_12);
export const PUT_ALLOCATIONS_V1_28 = extrasFirst(V1_28);
export const PUT_ALLOCATIONS_V1_34 = extrasFirst(V1_34);
export const PUT_ALLOCATIONS_V1_38 = extrasFirst(V1_38);

const byConsumer = <S extends z.ZodType>(perConsumer: S, min: number) => minProperties(z.record(UUID_KEY, perConsumer), min);

export const POST_ALLOCATIONS_V1_13 = byConsumer(extrasFirst(DELETABLE_ALLOCATIONS), 1);
export const POST_ALLOCATIONS_V1_28 = byConsumer(PUT_ALLOCATIONS_V1_28, 1);
export const POST_ALLOCATIONS_V1_34 = byConsumer(PUT_ALLOCATIONS_V1_34, 1);
export const POST_ALLOCATIONS_V1_38 = byConsumer(PUT_ALLOCATIONS_V1_38, 1);

/** Reshaper's allocations: the POST forms, but may be empty. */
export const RESHAPER_ALLOCATIONS_V1_30 = byConsumer(PUT_ALLOCATIONS_V1_28, 0);
export const RESHAPER_ALLOCATIONS_V1_34 = byConsumer(PUT_ALLOCATIONS_V1_34, 0);
export const RESHAPER_ALLOCATIONS_V1_38 = byConsumer(PUT_ALLOCATIONS_V1_38, 0);

/** What every version's per-consumer body has in common after parsing. */
export interface ParsedConsumerBody {
  allocations: Record<string, { resources: Record<string, number> }>;
  project_id?: string;
  user_id?: string;
  consumer_generation?: number | null;
  consumer_type?: string;
}
