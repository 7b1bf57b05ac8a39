/**
 * How much an allocation write changes one provider's usage of one class,
 * from what the model knew the written consumers held, and how much room the
 * class had there before it: for the documented exceptions about the
 * over-capacity rule (docs/placement-bugs.md). Undefined when the model cannot
 * tell (a consumer it dropped after an earlier difference, a body it cannot read).
 */
import type { Exchange, Model } from "./model.js";

type Resources = Record<string, number>;
type AllocationsBody = Record<string, { resources: Resources }> | Array<{ resource_provider: { uuid: string }; resources: Resources }>;
interface ConsumerBody {
  allocations?: AllocationsBody;
  consumer_generation?: number | null;
}

/** provider uuid -> resources, from either allocations form (a dict from 1.12, a list before). */
function byProvider(allocations: AllocationsBody | undefined): Map<string, Resources> {
  if (Array.isArray(allocations)) return new Map(allocations.map((a) => [a.resource_provider.uuid, a.resources]));
  return new Map(Object.entries(allocations ?? {}).map(([uuid, a]) => [uuid, a.resources]));
}

export function usageChange(model: Model, providerSymOf: (uuid: string) => string, e: Exchange, providerUuid: string, resourceClass: string): number | undefined {
  let body: unknown;
  try {
    body = JSON.parse(e.request.body ?? "null");
  } catch {
    return undefined;
  }
  if (!body || typeof body !== "object") return undefined;
  const put = /^\/allocations\/([^/?]+)$/.exec(e.request.path)?.[1];
  const writes: Array<[string, ConsumerBody]> =
    e.request.method === "PUT" && put ? [[put, body as ConsumerBody]] : e.request.method === "POST" ? Object.entries(body as Record<string, ConsumerBody>) : [];
  if (writes.length === 0) return undefined;
  const providerSym = providerSymOf(providerUuid);
  let change = 0;
  for (const [consumerUuid, write] of writes) {
    const consumer = model.consumers.get(consumerUuid);
    if (!consumer && write.consumer_generation !== null) return undefined;
    const before = consumer?.allocations.get(providerSym)?.[resourceClass] ?? 0;
    change += (byProvider(write.allocations).get(providerUuid)?.[resourceClass] ?? 0) - before;
  }
  return change;
}

/**
 * Capacity left for the class on the provider before a write: its capacity as
 * Placement computes it, int((total - reserved) * allocation_ratio), less the
 * allocations of every consumer the model knows. Undefined once the model has
 * dropped anything (its sum could then miss a consumer) or without the inventory.
 */
export function roomBefore(model: Model, providerSymOf: (uuid: string) => string, providerUuid: string, resourceClass: string): number | undefined {
  const providerSym = providerSymOf(providerUuid);
  const inventory = model.providers.get(providerSym)?.inventories.get(resourceClass);
  if (!inventory || model.diverged) return undefined;
  let used = 0;
  for (const consumer of model.consumers.values()) used += consumer.allocations.get(providerSym)?.[resourceClass] ?? 0;
  return Math.trunc((inventory.total - inventory.reserved) * inventory.allocation_ratio) - used;
}
