/**
 * The same GET requests to the reference and to our server after the import,
 * answer by answer: status and the JSON body exactly as written (so 16.0 and
 * 16 differ), request ids aside.
 */
import type { Cloud } from "./cloud.js";

export interface Difference {
  request: string;
  reference: string;
  ours: string;
}

async function get(baseUrl: string, path: string, version: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${baseUrl}${path}`, {
    headers: { "x-auth-token": "admin", "openstack-api-version": `placement ${version}`, accept: "application/json", connection: "close" },
  });
  const text = (await res.text()).replace(/req-[0-9a-f-]{36}/g, "req-*");
  return { status: res.status, text: text.startsWith("{") ? canonical(text) : text };
}

/**
 * The body as a JSON value: object members in name order (JSON objects have
 * none), and the lists upstream builds without an ORDER BY, from sets or in
 * heap order, sorted: provider lists, trait and aggregate lists, allocation
 * requests and their mappings. Number kinds (16.0 against 16) are the
 * differential test's business (test/compat), not the import's.
 */
export function canonical(text: string): string {
  const sortedJson = (v: unknown) => JSON.stringify(normalise(v));
  const UNORDERED = new Set(["traits", "aggregates", "allocation_requests", "mappings-list", "resource_providers"]);
  const normalise = (value: unknown, key?: string): unknown => {
    if (Array.isArray(value)) {
      const items = value.map((v) => normalise(v));
      return key && UNORDERED.has(key) ? items.sort((x, y) => sortedJson(x).localeCompare(sortedJson(y))) : items;
    }
    if (value && typeof value === "object") {
      const entries = Object.entries(value).map(([k, v]) => [k, normalise(v, key === "mappings" ? "mappings-list" : k)] as const);
      return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)));
    }
    return value;
  };
  return JSON.stringify(normalise(JSON.parse(text)));
}

/**
 * GET /traits: our standard traits come from a newer os-traits than
 * Placement 8.0.0's, so ours may list standard traits the reference lacks
 * (docs/placement-bugs.md: "Zed's standard traits and resource classes are older").
 */
function withoutNewerStandardTraits(ours: string, reference: string): string {
  const known = new Set<string>(JSON.parse(reference).traits);
  const body = JSON.parse(ours) as { traits: string[] };
  return canonical(JSON.stringify({ traits: body.traits.filter((t) => known.has(t) || t.startsWith("CUSTOM_")) }));
}

const CANDIDATE_QUERIES = [
  "resources=VCPU:1,MEMORY_MB:1024",
  "resources=VCPU:1,MEMORY_MB:1024,DISK_GB:10",
  "resources=VCPU:2&required=CUSTOM_RACK_A",
  "resources=VCPU:1&root_required=!COMPUTE_STATUS_DISABLED",
  "resources=VCPU:1&member_of=in:{agg2}",
  "resources_NUMA=PCPU:2&resources_NET=SRIOV_NET_VF:1&required_NET=CUSTOM_FAST_NET&same_subtree=_NUMA,_NET&group_policy=isolate",
  "resources=VCPU:1&resources1=PCPU:1,MEMORY_MB:1024&resources2=CUSTOM_GPU_A100:1&group_policy=none",
  "resources=VCPU:1,CUSTOM_LICENSE_WINDOWS:1",
  "resources=CUSTOM_BAREMETAL_GOLD:1",
  "resources=VCPU:2,DISK_GB:50&member_of=!in:{agg2}",
];

/** Every request compared, as [path, microversion]. */
export function comparedRequests(cloud: Cloud, options: { usagesAt138: boolean }): [string, string][] {
  const requests: [string, string][] = [
    ["/resource_providers", "1.39"],
    ["/resource_providers", "1.0"],
    ["/resource_classes", "1.7"],
    ["/traits", "1.6"],
    ["/traits?name=startswith:CUSTOM_", "1.6"],
    ["/traits?associated=true", "1.6"],
    [`/resource_providers?member_of=${cloud.aggregates[0]}`, "1.39"],
    ["/resource_providers?required=CUSTOM_FAST_NET", "1.39"],
    ["/resource_providers?resources=VCPU:4,MEMORY_MB:4096", "1.39"],
    [`/resource_providers?in_tree=${cloud.providers[0]}`, "1.39"],
  ];
  for (const rp of cloud.providers) {
    requests.push(
      [`/resource_providers/${rp}`, "1.39"],
      [`/resource_providers/${rp}/inventories`, "1.39"],
      [`/resource_providers/${rp}/usages`, "1.39"],
      [`/resource_providers/${rp}/aggregates`, "1.19"],
      [`/resource_providers/${rp}/traits`, "1.6"],
      [`/resource_providers/${rp}/allocations`, "1.39"],
    );
  }
  for (const c of cloud.consumers) requests.push([`/allocations/${c}`, "1.38"], [`/allocations/${c}`, "1.12"]);
  for (const p of cloud.projects) {
    requests.push([`/usages?project_id=${p}`, "1.9"], [`/usages?project_id=${p}`, "1.37"]);
    // Upstream answers 500 at 1.38 on PostgreSQL (docs/placement-bugs.md: "GET /usages at 1.38 on PostgreSQL").
    if (options.usagesAt138) requests.push([`/usages?project_id=${p}`, "1.38"], [`/usages?project_id=${p}&consumer_type=INSTANCE`, "1.38"]);
  }
  for (const q of CANDIDATE_QUERIES) {
    requests.push([`/allocation_candidates?${q.replaceAll("{agg2}", cloud.aggregates[1])}`, "1.39"]);
  }
  return requests;
}

export async function compareServers(referenceUrl: string, oursUrl: string, requests: [string, string][]): Promise<Difference[]> {
  const differences: Difference[] = [];
  for (const [path, version] of requests) {
    const [ref, ours] = await Promise.all([get(referenceUrl, path, version), get(oursUrl, path, version)]);
    if (path.startsWith("/traits") && ref.status === 200 && ours.status === 200) ours.text = withoutNewerStandardTraits(ours.text, ref.text);
    if (ref.status !== ours.status || ref.text !== ours.text) {
      // Around the first character that differs: enough to see why.
      let at = 0;
      while (at < ref.text.length && ref.text[at] === ours.text[at]) at++;
      const around = (t: string) => t.slice(Math.max(0, at - 150), at + 150);
      differences.push({ request: `GET ${path} @${version}`, reference: `${ref.status} ...${around(ref.text)}`, ours: `${ours.status} ...${around(ours.text)}` });
    }
  }
  return differences;
}
