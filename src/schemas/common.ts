/**
 * The patterns and JSON-Schema rules every request schema shares, written
 * once: names of resource classes, traits and consumer types, uuids,
 * generations, external ids, and the jsonschema rules zod lacks
 * (minProperties, uniqueItems, "type": "integer"). Each failure reads as
 * jsonschema's message for the same rule (see http/validation.ts), because
 * clients and the conformance tests match on Placement's wording.
 */
import { z } from "zod";
import { isUuidLike } from "../http/uuid.js";
import { pyRepr } from "../http/validation.js";

/** Standard resource class, trait and consumer type names: upper case, digits, underscores. */
export const NAME_PATTERN = /^[A-Z0-9_]+$/;
/** The names an operator may create: the standard alphabet behind CUSTOM_. */
export const CUSTOM_NAME_PATTERN = new RegExp(`^CUSTOM_${NAME_PATTERN.source.slice(1)}`);

/** A resource class name where a body names one (keys of `resources`, `resource_class`). */
export const RESOURCE_CLASS_NAME = z.string().regex(NAME_PATTERN);
/** A class a client may create: POST /resource_classes, PUT /resource_classes/{name}. */
export const CUSTOM_RESOURCE_CLASS = z.string().max(255).regex(CUSTOM_NAME_PATTERN);
/** Any trait name a body may list (existence is the service's question). */
export const TRAIT_NAME = z.string().min(1).max(255);
/** A trait a client may create: PUT /traits/{name}. */
export const CUSTOM_TRAIT = TRAIT_NAME.regex(CUSTOM_NAME_PATTERN);
/** A consumer type (1.38). */
export const CONSUMER_TYPE = z.string().regex(NAME_PATTERN).min(1).max(255);
/** project_id and user_id: Keystone's ids, or any other string an operator uses. */
export const EXTERNAL_ID = z.string().min(1).max(255);

/**
 * JSON Schema's "type": "integer". z.int() reports a string or a boolean as
 * "expected number", which would render as "is not of type 'number'";
 * jsonschema (and so Placement's clients) say 'integer', for NaN and the
 * infinities too (Python's json reads them). The bounds are the schema's
 * own, not z.int()'s safe-integer range, so 1e30 is "greater than the
 * maximum of 2147483647" as there; without a maximum, integers beyond the
 * safe range are still refused: a double cannot hold them exactly.
 */
export function zInteger(bounds: { min?: number; max?: number } = {}) {
  let inner = z.number().max(bounds.max ?? Number.MAX_SAFE_INTEGER);
  if (bounds.min !== undefined) inner = inner.min(bounds.min);
  return z
    .unknown()
    .superRefine((value, ctx) => {
      if (!Number.isInteger(value)) ctx.addIssue({ code: "invalid_type", expected: "int", input: value, message: "not an integer" });
    })
    .pipe(inner);
}

/** "type": ["integer", "null"] (consumer_generation), worded as jsonschema words a list of types. */
export function zNullableInteger() {
  return z
    .unknown()
    .superRefine((value, ctx) => {
      // A missing member is zod's invalid_type, which reads "is a required property".
      if (value === undefined) ctx.addIssue({ code: "invalid_type", expected: "int", input: value, message: "required" });
      else if (value !== null && !Number.isInteger(value)) {
        ctx.addIssue({ code: "custom", input: value, message: "not an integer or null", params: { validator: "type", types: ["integer", "null"] } });
      }
    })
    .pipe(z.number().max(Number.MAX_SAFE_INTEGER).nullable());
}

/** A provider generation the client saw (resource_provider_generation). */
export const GENERATION = zInteger();

/**
 * "format": "uuid" as Placement checks it on providers, aggregates and query
 * strings: oslo's is_uuid_like, which also takes upper case, no hyphens and
 * braces. Failures read "'x' is not a 'uuid'".
 */
export function zUuid() {
  return z.string().superRefine((value, ctx) => {
    if (!isUuidLike(value)) ctx.addIssue({ code: "invalid_format", format: "uuid", input: value, message: "not a uuid" });
  });
}

/** "format": "uuid" as the allocation bodies check it: hex digits, 8-4-4-4-12, dashes where they belong. */
export const DASHED_UUID = z.string().check((ctx) => {
  const v = ctx.value;
  const dashed = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(v);
  if (!dashed) {
    ctx.issues.push({ code: "custom", input: v, message: `${pyRepr(v)} is not a 'uuid'`, params: { validator: "format" } });
  }
});

/** jsonschema's UUID_PATTERN for object keys (consumers, providers): 36 hex digits or dashes. */
export const UUID_KEY = z.string().regex(/^[0-9a-fA-F-]{36}$/);

/** jsonschema's minProperties, with its wording ("{} does not have enough properties"). */
export function minProperties<S extends z.ZodType>(schema: S, min: number): S {
  return schema.check((ctx) => {
    const v = ctx.value;
    if (v && typeof v === "object" && Object.keys(v).length < min) {
      ctx.issues.push({ code: "custom", input: v, message: `${pyRepr(v)} does not have enough properties`, params: { validator: "minProperties" } });
    }
  }) as unknown as S;
}

/** jsonschema's uniqueItems, which zod has no rule for. */
export function uniqueItems<S extends z.ZodType<unknown[]>>(schema: S): S {
  return schema.check((ctx) => {
    const items = ctx.value;
    if (new Set(items).size !== items.length) {
      ctx.issues.push({ code: "custom", input: items, message: `${pyRepr(items)} has non-unique elements`, params: { validator: "uniqueItems" } });
    }
  }) as unknown as S;
}
