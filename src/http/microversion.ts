/**
 * The one module that knows about microversions: the list of versions, the
 * parsing of the `OpenStack-API-Version` header and the comparisons handlers use.
 */
import { notAcceptable, PlacementError } from "./errors.js";

/** Every microversion, oldest first, with what it changed. */
export const VERSIONS = [
  "1.0", // initial version
  "1.1", // resource provider aggregates
  "1.2", // custom resource classes
  "1.3", // member_of on GET /resource_providers
  "1.4", // resources filter on GET /resource_providers
  "1.5", // DELETE /resource_providers/{uuid}/inventories
  "1.6", // traits
  "1.7", // PUT /resource_classes/{name} creates a custom class, no body
  "1.8", // project_id and user_id required on PUT /allocations
  "1.9", // GET /usages
  "1.10", // GET /allocation_candidates
  "1.11", // allocations link on resource providers
  "1.12", // PUT /allocations in dict format
  "1.13", // POST /allocations
  "1.14", // nested providers: parent_provider_uuid, root_provider_uuid, in_tree
  "1.15", // Last-Modified and Cache-Control headers
  "1.16", // limit on GET /allocation_candidates
  "1.17", // required traits on GET /allocation_candidates
  "1.18", // required traits on GET /resource_providers
  "1.19", // aggregates with resource_provider_generation
  "1.20", // POST /resource_providers returns the provider
  "1.21", // member_of on GET /allocation_candidates
  "1.22", // forbidden traits (!TRAIT)
  "1.23", // error codes in error responses
  "1.24", // repeated member_of
  "1.25", // granular request groups
  "1.26", // reserved may equal total
  "1.27", // all inventory classes in provider_summaries
  "1.28", // consumer generations
  "1.29", // nested providers in allocation candidates
  "1.30", // POST /reshaper
  "1.31", // in_tree on GET /allocation_candidates
  "1.32", // forbidden aggregates (!member_of)
  "1.33", // string suffixes on request groups
  "1.34", // mappings in allocation requests
  "1.35", // root_required
  "1.36", // same_subtree
  "1.37", // re-parenting providers
  "1.38", // consumer types
  "1.39", // any-of traits (in:) and repeated required
] as const;

export type VersionString = (typeof VERSIONS)[number];

export const MIN_VERSION = VERSIONS[0];
export const MAX_VERSION = VERSIONS[VERSIONS.length - 1];
export const HEADER = "openstack-api-version";
export const SERVICE_TYPE = "placement";

/** A requested microversion. Comparisons take version strings from VERSIONS only, so typos do not compile. */
export class Microversion {
  constructor(
    readonly major: number,
    readonly minor: number,
  ) {}

  static from(v: VersionString): Microversion {
    const [major, minor] = v.split(".").map(Number);
    return new Microversion(major, minor);
  }

  compare(other: Microversion): number {
    return this.major - other.major || this.minor - other.minor;
  }

  atLeast(v: VersionString): boolean {
    return this.compare(Microversion.from(v)) >= 0;
  }

  lessThan(v: VersionString): boolean {
    return !this.atLeast(v);
  }

  toString(): string {
    return `${this.major}.${this.minor}`;
  }
}

const MAX = Microversion.from(MAX_VERSION);

/**
 * Reads the version a request asks for from its headers, as Placement's
 * microversion_parse does. No header means the minimum version; `latest`
 * means the maximum. A value that is not two integers is a 400 worded with the
 * Python error behind it; two integers that are not a listed version
 * (`1.40`, `1.-1`, `-1.0`) are a 406.
 */
export function parseMicroversion(headerValue: string | undefined, accept?: string): Microversion {
  const requested = (headerValue ? findPlacementVersion(headerValue) : undefined) || MIN_VERSION;
  if (requested === "latest") return MAX;
  const [major, minor] = parseVersionString(requested);
  const version = new Microversion(major, minor);
  if (!(VERSIONS as readonly string[]).includes(version.toString())) {
    // Like Placement, the 406 names the range the client could have asked for.
    throw notAcceptable(`Invalid microversion: Unacceptable version header: ${requested}`, accept, {
      max_version: MAX_VERSION,
      min_version: MIN_VERSION,
    });
  }
  return version;
}

/**
 * microversion_parse's `Version(*(int(v) for v in s.split('.', 1)))`, with
 * the message of the Python exception it raises on anything else.
 */
function parseVersionString(text: string): [number, number] {
  const fail = (reason: string): never => {
    throw new PlacementError(400, `Invalid microversion: invalid version string: ${text}; ${reason}`);
  };
  const dot = text.indexOf(".");
  const parts = dot < 0 ? [text] : [text.slice(0, dot), text.slice(dot + 1)];
  const numbers = parts.map((part) => {
    const trimmed = part.trim();
    if (!/^[+-]?\d+(_\d+)*$/.test(trimmed)) fail(`invalid literal for int() with base 10: ${pythonRepr(part)}`);
    return Number(trimmed.replace(/_/g, ""));
  });
  if (numbers.length < 2) fail("Version.__new__() missing 1 required positional argument: 'minor'");
  return [numbers[0], numbers[1]];
}

/** Python's repr() of a str, for the error messages above (a header value holds no control character but tab). */
function pythonRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const escaped = text.replace(/\\/g, "\\\\").replace(/\t/g, "\\t");
  return quote + (quote === "'" ? escaped.replace(/'/g, "\\'") : escaped) + quote;
}

/**
 * The header is a comma-separated list of "service version" pairs; the last
 * one for our service counts (microversion_parse reads them in reverse).
 */
function findPlacementVersion(headerValue: string): string | undefined {
  for (const part of headerValue.split(",").reverse()) {
    const match = /^(\S+)\s+([\s\S]+)$/.exec(part.trim());
    // The version itself is case-sensitive: Placement refuses "LATEST" with a 400.
    if (match && match[1].toLowerCase() === SERVICE_TYPE) return match[2].trim();
  }
  return undefined;
}
