/**
 * The pieces requests are made of: microversions, headers, names and the
 * deliberately bad variants of each.
 */
import type { Random } from "./random.js";
import type { Request } from "./request.js";

export const MAX_MINOR = 39;

export interface Version {
  /** The minor version the body is shaped for. */
  minor: number;
  /** The openstack-api-version header value, or null to send none. */
  header: string | null;
}

const BAD_VERSION_HEADERS = [
  "placement 1.-1",
  "placement -1.0",
  "placement 1.40",
  "placement 2.0",
  "placement 0.9",
  "placement abc",
  "placement 1",
  "placement 1.2.3",
  "compute 1.5",
  "placement 1.01",
  "placement ",
];

/** A microversion for a route that exists since 1.`min`: mostly valid, sometimes too old or malformed. */
export function pickVersion(r: Random, min = 0): Version {
  return r.weighted<() => Version>([
    [80, () => {
      const minor = r.int(min, MAX_MINOR);
      return { minor, header: `placement 1.${minor}` };
    }],
    [5, () => ({ minor: MAX_MINOR, header: "placement latest" })],
    [min === 0 ? 4 : 1, () => ({ minor: 0, header: null })],
    [min > 0 ? 6 : 0, () => {
      const minor = r.int(0, min - 1);
      return { minor, header: `placement 1.${minor}` };
    }],
    [4, () => ({ minor: MAX_MINOR, header: r.pick(BAD_VERSION_HEADERS) })],
  ])();
}

export const STANDARD_CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB", "IPV4_ADDRESS", "SRIOV_NET_VF", "VGPU"];
export const STANDARD_TRAITS = [
  "HW_CPU_X86_AVX2",
  "HW_CPU_X86_SSE",
  "STORAGE_DISK_SSD",
  "COMPUTE_VOLUME_MULTI_ATTACH",
  "HW_NUMA_ROOT",
  "MISC_SHARES_VIA_AGGREGATE",
];
export const PROJECTS = ["proj-a", "proj-b", "7e1a1fd5-0c77-4d4c-9a5f-0fba3e8b1c11"];
export const USERS = ["user-a", "user-b"];
export const CONSUMER_TYPES = ["INSTANCE", "MIGRATION", "CUSTOM_TYPE"];

/** The headers of a request: token, version, Accept and (with a body) Content-Type, with rare bad variants. */
export function headersFor(r: Random, version: Version, hasBody: boolean): Record<string, string> {
  const headers: Record<string, string> = {};
  const token = r.weighted<string | null>([
    [95, "admin"],
    [2, null],
    [3, "someone:proj-a"],
  ]);
  if (token !== null) headers["x-auth-token"] = token;
  if (version.header !== null) headers["openstack-api-version"] = version.header;
  headers["accept"] = r.weighted([
    [96, "application/json"],
    [1, "text/html"],
    [1, "text/plain"],
    [1, "*/*"],
    [1, "application/xml"],
  ]);
  if (hasBody) {
    const contentType = r.weighted<string | null>([
      [94, "application/json"],
      [2, "APPLICATION/JSON"],
      [1, "application/json; charset=UTF-8"],
      [2, "text/plain"],
      [1, null],
    ]);
    if (contentType !== null) headers["content-type"] = contentType;
  }
  return headers;
}

/** A request with a JSON body (or a raw string body), headers drawn as above. */
export function request(r: Random, method: string, path: string, version: Version, body?: unknown): Request {
  const text = body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body);
  return { method, path, headers: headersFor(r, version, text !== undefined), body: text };
}

/** A body that is not what any route wants. */
export function garbageBody(r: Random): string {
  return r.pick(["not json", "{}", "[]", "null", '{"a": 1}', "{", '"text"', "12"]);
}
