/**
 * The query string of GET /allocation_candidates (1.10), which POST /claims
 * takes too, as Placement's schemas/allocation_candidate.py: which keys are
 * allowed at each microversion. Before 1.25 a fixed set; from 1.25 the fixed
 * request-wide keys plus any group key (`resources<S>`, `required<S>`,
 * `member_of<S>`, `in_tree<S>` from 1.31) whose suffix matches (numbers
 * until 1.32, names from 1.33), as jsonschema's patternProperties. The
 * values are parsed after validation by query/request-groups.ts.
 */
import { z } from "zod";
import { pyRepr } from "../http/validation.js";
import { versioned } from "./versioned.js";

/** `limit`: a positive integer, written without sign or leading zero. */
export const LIMIT = z.string().regex(/^[1-9][0-9]*$/);
/** Group suffixes until 1.32: numbers. */
export const NUMBERED_SUFFIX = "[1-9][0-9]*";
/** Group suffixes from 1.33: names. */
export const NAMED_SUFFIX = "[a-zA-Z0-9_-]{1,64}";

const V1_10 = z.strictObject({ resources: z.string() });
const V1_16 = V1_10.extend({ limit: LIMIT.optional() });
const V1_17 = V1_16.extend({ required: z.string().optional() });
const V1_21 = V1_17.extend({ member_of: z.string().optional() });
const V1_25_FIXED = z.object({ limit: LIMIT.optional(), group_policy: z.enum(["none", "isolate"]).optional() });
const V1_35_FIXED = V1_25_FIXED.extend({ root_required: z.string().optional() });
const V1_36_FIXED = V1_35_FIXED.extend({ same_subtree: z.string().optional() });

/** From 1.25 any key is allowed that is a fixed one or a group key with a valid suffix, as jsonschema's patternProperties. */
function groupedSchema(fixed: z.ZodObject, prefixes: string[], suffixPattern: string) {
  const patterns = prefixes.map((p) => `^${p}(${suffixPattern})?$`).sort();
  const regexes = patterns.map((p) => new RegExp(p));
  const known = new Set(Object.keys(fixed.shape));
  // The same rule in JSON Schema's words, for the OpenAPI document (a refinement has none).
  const asJsonSchema = { patternProperties: Object.fromEntries(patterns.map((p) => [p, { type: "string" }])), additionalProperties: false };
  return z.looseObject(fixed.shape).superRefine((dict, ctx) => {
    const extras = Object.keys(dict)
      .filter((k) => !known.has(k) && !regexes.some((r) => r.test(k)))
      .sort();
    if (extras.length === 0) return;
    ctx.addIssue({
      code: "custom",
      message: `${extras.map((k) => pyRepr(k)).join(", ")} ${extras.length === 1 ? "does" : "do"} not match any of the regexes: ${patterns.map((p) => pyRepr(p)).join(", ")}`,
      params: { validator: "additionalProperties" },
      path: [],
    });
  }).meta(asJsonSchema);
}

const GROUP_KEYS = ["resources", "required", "member_of", "in_tree"];

// Built once, at import: a zod schema costs far more to build than to run.
export const CANDIDATES_QUERY = versioned([
  { from: "1.10", schema: V1_10 },
  { from: "1.16", schema: V1_16 },
  { from: "1.17", schema: V1_17 },
  { from: "1.21", schema: V1_21 },
  { from: "1.25", schema: groupedSchema(V1_25_FIXED, ["resources", "required", "member_of"], NUMBERED_SUFFIX) },
  { from: "1.31", schema: groupedSchema(V1_25_FIXED, GROUP_KEYS, NUMBERED_SUFFIX) },
  { from: "1.33", schema: groupedSchema(V1_25_FIXED, GROUP_KEYS, NAMED_SUFFIX) },
  { from: "1.35", schema: groupedSchema(V1_35_FIXED, GROUP_KEYS, NAMED_SUFFIX) },
  { from: "1.36", schema: groupedSchema(V1_36_FIXED, GROUP_KEYS, NAMED_SUFFIX) },
]);
