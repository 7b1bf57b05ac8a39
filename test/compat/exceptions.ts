/**
 * The documented exceptions: differences where the reference is wrong and we
 * are deliberately right. Each names its entry in docs/placement-bugs.md (the
 * heading's anchor); a test checks that the two lists are the same.
 */
import type { Difference } from "./compare.js";
import { isolatedAmountsAccumulate } from "./isolated-amounts.js";
import type { Exchange } from "./model.js";

/** What the workload knows beyond the exchange. */
export interface BugContext {
  /** Custom resource class names the run renamed away or deleted (see Model.retiredClasses). */
  retiredClasses: ReadonlySet<string>;
  /** How much an allocation write changes a provider's usage of a class, if the model can tell (usage-change.ts). */
  usageChange(exchange: Exchange, providerUuid: string, resourceClass: string): number | undefined;
  /** Capacity the class had left on the provider before the write, if the model can tell (usage-change.ts). */
  roomBefore(providerUuid: string, resourceClass: string): number | undefined;
}

/** The capacity refusal's detail, naming the class and the provider. */
const CAPACITY_REFUSAL =
  /Unable to create allocation for '([A-Z0-9_]+)' on resource provider '([0-9a-f-]{36})'\. The requested amount would exceed the capacity/;

export interface KnownBug {
  /** The anchor of the entry's heading in docs/placement-bugs.md. */
  anchor: string;
  matches(exchange: Exchange, differences: Difference[], context: BugContext): boolean;
}

const versionOf = (exchange: Exchange): number => {
  const header = exchange.request.headers["openstack-api-version"] ?? "";
  if (header === "placement latest") return 39;
  const match = /^placement 1\.(\d+)$/.exec(header);
  return match ? Number(match[1]) : 0;
};

const path = (exchange: Exchange) => exchange.request.path;

interface InventoryBody {
  total?: number;
  reserved?: number;
  allocation_ratio?: number;
}

export const KNOWN_BUGS: KnownBug[] = [
  {
    anchor: "get-usages-at-138-answers-500-on-postgresql",
    matches: (e) => path(e).startsWith("/usages?") && versionOf(e) >= 38 && e.reference.status === 500 && e.ours.status === 200,
  },
  {
    anchor: "nested-forbidden-trait-candidates-answer-500",
    matches: (e) =>
      path(e).startsWith("/allocation_candidates?") &&
      /(required|root_required)[0-9_A-Z]*=[^&]*(!|%21)/.test(decodeURIComponent(path(e))) &&
      e.reference.status === 500 &&
      e.ours.status === 200,
  },
  {
    anchor: "a-400-for-an-unknown-provider-leaves-a-phantom-consumer",
    // The reference's 409 comes from the phantom; ours is the answer the allocation itself deserves.
    matches: (e) =>
      e.label.includes("retry after unknown provider") &&
      e.reference.text.includes("consumer generation conflict - expected 0 but got None") &&
      !e.ours.text.includes("consumer generation conflict"),
  },
  {
    anchor: "sharing-provider-with-granular-groups-drops-a-candidate",
    matches: (e, differences) => {
      if (!path(e).startsWith("/allocation_candidates?") || !/resources\d/.test(path(e))) return false;
      if (e.reference.status !== 200 || e.ours.status !== 200) return false;
      // Everything the reference answers, we answer too; we only have more.
      const ref = JSON.parse(e.reference.text) as { allocation_requests: unknown[] };
      const ours = JSON.parse(e.ours.text) as { allocation_requests: unknown[] };
      const mine = new Set(ours.allocation_requests.map((a) => JSON.stringify(a)));
      return (
        ours.allocation_requests.length > ref.allocation_requests.length &&
        ref.allocation_requests.every((a) => mine.has(JSON.stringify(a))) &&
        differences.every((d) => d.aspect.startsWith("body"))
      );
    },
  },
  {
    anchor: "an-aggregate-uuid-longer-than-36-characters-answers-500",
    matches: (e) =>
      e.request.method === "PUT" &&
      /\/aggregates$/.test(path(e)) &&
      e.reference.status === 500 &&
      e.ours.status === 400 &&
      /urn:uuid:|\{/.test(e.request.body ?? ""),
  },
  {
    anchor: "a-second-post-of-the-same-inventory-leaks-sql-in-its-409",
    matches: (e, differences) =>
      e.request.method === "POST" &&
      /\/inventories$/.test(path(e)) &&
      e.reference.status === 409 &&
      e.ours.status === 409 &&
      e.reference.text.includes("psycopg2") &&
      differences.every((d) => d.aspect === "body .errors[].detail"),
  },
  {
    anchor: "a-negative-allocation-ratio-lets-reserved-exceed-total",
    matches: (e) => {
      if (!/\/inventories(\/[A-Z0-9_]+)?$/.test(path(e)) || e.ours.status !== 400 || e.reference.status >= 300) return false;
      let body: ({ inventories?: Record<string, InventoryBody> } & InventoryBody) | null = null;
      try {
        body = JSON.parse(e.request.body ?? "null");
      } catch {
        return false;
      }
      if (!body || typeof body !== "object") return false;
      const items = body.inventories && typeof body.inventories === "object" ? Object.values(body.inventories) : [body];
      return items.some((inv) => (inv.allocation_ratio ?? 1) < 0 && (inv.reserved ?? 0) > (inv.total ?? 0));
    },
  },
  {
    anchor: "zeds-standard-traits-and-resource-classes-are-older",
    matches: (e) => {
      if (e.request.method !== "GET" || !/^\/(traits|resource_classes)(\?|$)/.test(path(e))) return false;
      if (e.reference.status !== 200 || e.ours.status !== 200) return false;
      const names = (text: string): string[] => {
        const body = JSON.parse(text) as { traits?: string[]; resource_classes?: Array<{ name: string }> };
        return body.traits ?? (body.resource_classes ?? []).map((rc) => rc.name);
      };
      const ref = new Set(names(e.reference.text));
      const ours = names(e.ours.text);
      // Nothing of Zed's is missing; everything more is a standard (not CUSTOM_) name.
      return [...ref].every((n) => ours.includes(n)) && ours.every((n) => ref.has(n) || !n.startsWith("CUSTOM_"));
    },
  },
  {
    anchor: "isolate-sums-a-shared-providers-amount-more-than-once",
    matches: (e, differences) =>
      path(e).startsWith("/allocation_candidates?") &&
      e.reference.status === 200 &&
      e.ours.status === 200 &&
      differences.every((d) => d.aspect.startsWith("body")) &&
      isolatedAmountsAccumulate(path(e), e.reference.text, e.ours.text),
  },
  {
    anchor: "a-sharing-provider-below-a-root-answers-500",
    // The reference's detail is the bare KeyError: the internal id of the provider whose summary it never built.
    matches: (e) =>
      path(e).startsWith("/allocation_candidates?") &&
      e.reference.status === 500 &&
      /\\n\\n \d+ {2}"/.test(e.reference.text) &&
      e.ours.status === 200,
  },
  {
    anchor: "a-renamed-or-deleted-resource-class-lives-on-in-the-other-workers",
    matches: (e, _differences, context) => {
      if (e.ours.status !== 400 || e.reference.status === 400) return false;
      const named = /No such resource class ([A-Z0-9_]+)/.exec(e.ours.text)?.[1];
      return named !== undefined && context.retiredClasses.has(named);
    },
  },
  {
    anchor: "a-deeply-nested-body-answers-500",
    matches: (e) => e.reference.status === 500 && e.ours.status === 400 && e.reference.text.includes("maximum recursion depth exceeded"),
  },
  {
    anchor: "an-over-capacity-provider-refuses-a-write-that-does-not-raise-its-usage",
    matches: (e, _differences, context) => {
      if (e.reference.status !== 409 || e.ours.status >= 300) return false;
      const refused = CAPACITY_REFUSAL.exec(e.reference.text);
      if (!refused) return false;
      const change = context.usageChange(e, refused[2], refused[1]);
      return change !== undefined && change <= 0;
    },
  },
  {
    anchor: "a-nan-or-negative-infinite-allocation-ratio-answers-500",
    matches: (e) => e.reference.status === 500 && e.ours.status === 400 && /cannot convert float (NaN|infinity) to integer/.test(e.reference.text),
  },
  {
    anchor: "concurrent-claims-overcommit-a-provider-under-1400s-over-capacity-rule",
    // Only where the agreed state proves the write raises the usage past the capacity: ours is then right to refuse it.
    matches: (e, _differences, context) => {
      if (e.reference.status !== 204 || e.ours.status !== 409) return false;
      const refused = CAPACITY_REFUSAL.exec(e.ours.text);
      if (!refused) return false;
      const change = context.usageChange(e, refused[2], refused[1]);
      const room = context.roomBefore(refused[2], refused[1]);
      return change !== undefined && room !== undefined && change > 0 && change > room;
    },
  },
];

export function knownBug(exchange: Exchange, differences: Difference[], context: BugContext): KnownBug | undefined {
  return KNOWN_BUGS.find((bug) => bug.matches(exchange, differences, context));
}
