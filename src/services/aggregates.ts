/**
 * Aggregate membership of providers. Aggregates are only uuids: one is
 * created the first time any provider is put in it and kept afterwards.
 */
import { and, asc, eq, inArray, notInArray } from "drizzle-orm";
import type { Queryable, Tx } from "../db/database.js";
import { aggregates, resourceProviderAggregates } from "../db/schema.js";
import { bumpProviderGeneration, checkGeneration, getProviderByUuid, lockProviderForNoKeyUpdate, type ProviderRow } from "./providers.js";
import { writeTransaction, type Store } from "./store.js";

/** GET /resource_providers/{uuid}/aggregates: the provider and the uuids of its aggregates, oldest aggregate first. */
export async function getProviderAggregates(q: Queryable, uuid: string): Promise<{ provider: ProviderRow; aggregates: string[] }> {
  const provider = await getProviderByUuid(q, uuid);
  return { provider, aggregates: await aggregatesOf(q, provider.id) };
}

async function aggregatesOf(q: Queryable, providerId: number): Promise<string[]> {
  const rows = await q
    .select({ uuid: aggregates.uuid })
    .from(resourceProviderAggregates)
    .innerJoin(aggregates, eq(aggregates.id, resourceProviderAggregates.aggregateId))
    .where(eq(resourceProviderAggregates.resourceProviderId, providerId))
    .orderBy(asc(aggregates.id));
  return rows.map((r) => r.uuid);
}

/**
 * Makes `uuids` the provider's aggregates. With `expectedGeneration` (from
 * microversion 1.19) the generation is checked and bumped; before 1.19
 * Placement changes membership without touching the generation, and so do
 * we. Returns the provider's generation afterwards.
 */
export async function setProviderAggregates(
  store: Store,
  providerUuid: string,
  uuids: readonly string[],
  expectedGeneration?: number,
): Promise<number> {
  return writeTransaction(store, (tx) => setProviderAggregatesIn(tx, providerUuid, uuids, expectedGeneration));
}

async function setProviderAggregatesIn(
  tx: Tx,
  providerUuid: string,
  uuids: readonly string[],
  expectedGeneration?: number,
): Promise<number> {
  const provider = await lockProviderForNoKeyUpdate(tx, providerUuid);
  if (expectedGeneration !== undefined) checkGeneration(provider, expectedGeneration, "aggregates");
  const wanted = [...new Set(uuids)];
  let ids: number[] = [];
  if (wanted.length > 0) {
    // ON CONFLICT: another transaction may create the same aggregate at the
    // same moment; a unique violation would abort this whole transaction.
    await tx
      .insert(aggregates)
      .values(wanted.map((uuid) => ({ uuid })))
      .onConflictDoNothing();
    const rows = await tx.select({ id: aggregates.id }).from(aggregates).where(inArray(aggregates.uuid, wanted));
    ids = rows.map((r) => r.id);
  }
  await tx
    .delete(resourceProviderAggregates)
    .where(
      and(
        eq(resourceProviderAggregates.resourceProviderId, provider.id),
        ids.length > 0 ? notInArray(resourceProviderAggregates.aggregateId, ids) : undefined,
      ),
    );
  if (ids.length > 0) {
    await tx
      .insert(resourceProviderAggregates)
      .values(ids.map((aggregateId) => ({ resourceProviderId: provider.id, aggregateId })))
      .onConflictDoNothing();
  }
  if (expectedGeneration === undefined) return provider.generation;
  return bumpProviderGeneration(tx, provider, { generation: provider.generation, writing: "aggregates" });
}
