/**
 * JSON Schema's "type": "integer" in zod. z.int() reports a string or a
 * boolean as "expected number", which would render as "is not of type
 * 'number'"; jsonschema (and so Placement's clients) say 'integer'.
 */
import { z } from "zod";

export function zInteger(bounds: { min?: number; max?: number } = {}) {
  let inner = z.int();
  if (bounds.min !== undefined) inner = inner.min(bounds.min);
  if (bounds.max !== undefined) inner = inner.max(bounds.max);
  return z
    .unknown()
    .superRefine((value, ctx) => {
      if (typeof value !== "number") ctx.addIssue({ code: "invalid_type", expected: "int", input: value, message: "not an integer" });
    })
    .pipe(inner);
}
