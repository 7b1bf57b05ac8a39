/**
 * POST /reshaper (1.30): move inventory and the allocations against it
 * between providers (typically from a root to a new child) in one
 * transaction, so nobody ever sees the inventory without its allocations or
 * the reverse.
 *
 * Placement's three steps, kept because clients observe their generations:
 * 1. interim inventory: each provider gets the union of its new inventory
 *    and the classes being removed (allocations cannot be created against
 *    inventory that does not exist yet, nor inventory removed under
 *    allocations that still exist); a provider whose new inventory is empty
 *    is left alone here;
 * 2. the allocations are replaced (replaceAllocations, same checks as PUT);
 * 3. each provider gets exactly its new inventory.
 * Every step bumps the generation of the providers it writes.
 */
import { sql } from "drizzle-orm";
import type { Tx } from "../db/database.js";
import { executePrepared } from "../db/prepared.js";
import { replaceAllocations, type ConsumerAllocations } from "./allocations.js";
import { checkConsumerGeneration, lockConsumers } from "./consumers.js";
import { ClassNotFound, GenerationConflict, ProviderNotFound } from "./errors.js";
import { assertCapacity, classIdsByName, inventoryRowsToLock, listInventories, setProviderInventories, type InventoryData } from "./inventories.js";
import { lockProvidersForNoKeyUpdate, type ProviderRow } from "./providers.js";
import { writeTransaction, type Store } from "./store.js";

export interface ProviderInventories {
  providerUuid: string;
  /** The generation the client saw; a different one is a 409. */
  generation: number;
  inventories: Map<string, InventoryData>;
}

/** POST /reshaper, in one transaction retried as allocation writes are; ConcurrentUpdate when the retries run out. */
export async function reshape(store: Store, inventories: readonly ProviderInventories[], allocations: readonly ConsumerAllocations[]): Promise<void> {
  await writeTransaction(store, (tx) => reshapeIn(tx, inventories, allocations), {
    retries: store.allocationRetries,
    during: "reshape",
  });
}

async function reshapeIn(tx: Tx, inventories: readonly ProviderInventories[], allocations: readonly ConsumerAllocations[]): Promise<void> {
  // Global lock order: consumers first, then providers (see services/allocations.ts). The
  // providers the allocations name are locked here too, with the others in one id-ordered
  // statement, so the allocation step below only re-takes locks it already holds.
  const consumers = await lockConsumers(tx, allocations.map((a) => a.consumerUuid));
  const allocated = allocations.flatMap((a) => Object.keys(a.allocations));
  const providers = await lockProvidersByUuid(tx, [...new Set([...inventories.map((i) => i.providerUuid), ...allocated])]);
  // Then every inventory row the steps below can change (the usage triggers lock them statement by
  // statement, in no fixed order across statements): those of these providers and of the providers
  // the consumers hold allocations on now, at once, in id order (see inventoryRowsToLock).
  const providerIds = [...providers.values()].map((p) => p.id);
  const lockedConsumers = [...consumers.values()].map((c) => c.id);
  await executePrepared(tx, inventoryRowsToLock(sql`SELECT unnest(${sql.param(providerIds)}::int[])`, lockedConsumers), "pl_lock_reshaped_inventories");
  for (const inv of inventories) {
    const provider = providers.get(inv.providerUuid);
    if (!provider) throw new ProviderNotFound(inv.providerUuid, "reshape");
    if (provider.generation !== inv.generation) {
      throw new GenerationConflict({
        of: "provider",
        uuid: inv.providerUuid,
        writing: "reshape",
        given: inv.generation,
        actual: provider.generation,
      });
    }
    assertCapacity(provider.uuid, inv.inventories, true, "reshape");
  }
  await assertWritable(tx, consumers, providers, inventories, allocations);

  for (const inv of inventories) {
    if (inv.inventories.size === 0) continue;
    const provider = providers.get(inv.providerUuid)!;
    const interim = new Map<string, InventoryData>((await listInventories(tx, provider.id)).map((v) => [v.resourceClass, v]));
    for (const [rc, data] of inv.inventories) interim.set(rc, data);
    provider.generation = await setProviderInventories(tx, provider, interim, "replace");
  }

  await replaceAllocations(tx, allocations, { in: "reshape" });

  // The allocation write bumped some of these providers: read their generations again (the rows are still locked by us).
  const current = new Map((await lockProvidersForNoKeyUpdate(tx, [...providers.values()].map((p) => p.id))).map((p) => [p.uuid, p]));
  for (const inv of inventories) {
    await setProviderInventories(tx, current.get(inv.providerUuid)!, inv.inventories, "replace");
  }
}

/**
 * The refusals Placement makes before it writes anything, in its order (a
 * client that is wrong twice sees the same error from both): a stale consumer
 * generation (409), then a provider of the allocations that does not exist,
 * then a class of the new inventories that does not exist (400s). The steps
 * below would find the last two too, but only after the interim inventories.
 */
async function assertWritable(
  tx: Tx,
  consumers: ReadonlyMap<string, { generation: number }>,
  providers: ReadonlyMap<string, ProviderRow>,
  inventories: readonly ProviderInventories[],
  allocations: readonly ConsumerAllocations[],
): Promise<void> {
  for (const write of allocations) checkConsumerGeneration(write.consumerUuid, consumers.get(write.consumerUuid)?.generation ?? null, write.generation);
  for (const uuid of allocations.flatMap((a) => Object.keys(a.allocations))) {
    if (!providers.has(uuid)) throw new ProviderNotFound(uuid, "allocate");
  }
  const names = [...new Set(inventories.flatMap((inv) => [...inv.inventories.keys()]))];
  const known = await classIdsByName(tx, names);
  const unknown = names.find((name) => !known.has(name));
  if (unknown !== undefined) throw new ClassNotFound(unknown, { in: "reshape" });
}

async function lockProvidersByUuid(tx: Tx, uuids: string[]): Promise<Map<string, ProviderRow>> {
  if (uuids.length === 0) return new Map();
  const ids = await executePrepared<{ id: number }>(tx, sql`SELECT id FROM resource_providers WHERE uuid = ANY(${sql.param(uuids)}::text[])`, "pl_provider_ids_by_uuid");
  const rows = await lockProvidersForNoKeyUpdate(tx, ids.rows.map((r) => r.id));
  return new Map(rows.map((p) => [p.uuid, p]));
}
