/**
 * UUIDs as Placement accepts them: JSON Schema's "format": "uuid" is checked
 * with oslo's is_uuid_like, which also takes upper case, no hyphens and braces.
 * Failures read as jsonschema's "'x' is not a 'uuid'", which clients match on.
 */
import { z } from "zod";
import { isUuidLike } from "../query/values.js";

/** A string in any form is_uuid_like accepts. */
export function zUuid() {
  return z.string().superRefine((value, ctx) => {
    if (!isUuidLike(value)) ctx.addIssue({ code: "invalid_format", format: "uuid", input: value, message: "not a uuid" });
  });
}

/**
 * The canonical lower-case, hyphenated form of any spelling Python's
 * uuid.UUID() takes (no hyphens, braces, "urn:uuid:"); undefined when the
 * value is not a uuid at all.
 */
export function parseUuid(raw: string): string | undefined {
  const hex = raw.toLowerCase().replace(/^urn:/, "").replace(/^uuid:/, "").replace(/[{}-]/g, "");
  if (!/^[0-9a-f]{32}$/.test(hex)) return undefined;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The canonical form of a value already validated as a uuid (zUuid). */
export function canonicalUuid(value: string): string {
  return parseUuid(value) ?? value.toLowerCase();
}

