/**
 * UUIDs as Placement reads them from paths, query strings and bodies: oslo's
 * is_uuid_like (what "format": "uuid" means there) and the canonical form of
 * any spelling Python's uuid.UUID() takes. The zod rules built on these are
 * in schemas/common.ts.
 */

/** oslo's is_uuid_like: 32 hex digits once hyphens, braces and a urn prefix are dropped. */
export function isUuidLike(value: string): boolean {
  return /^[0-9a-f]{32}$/i.test(value.replace(/^urn:uuid:/i, "").replace(/[{}-]/g, ""));
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
