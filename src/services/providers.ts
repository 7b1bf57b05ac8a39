/**
 * Resource providers: lookups other services build on, the generation
 * compare-and-bump every provider write goes through, and the provider CRUD
 * behind /resource_providers.
 */
import { asc, eq, inArray, sql } from "drizzle-orm";
import type { Queryable, Tx } from "../db/database.js";
import { resourceProviders } from "../db/schema.js";
import { conflict, ErrorCode, PlacementError } from "../http/errors.js";

export type ProviderRow = typeof resourceProviders.$inferSelect;

/** Placement's 404 for a provider uuid that does not exist (its wording replaces the standard explanation). */
export function providerNotFound(uuid: string, suffix = ""): PlacementError {
  const message = `No resource provider with uuid ${uuid} found${suffix}`;
  return new PlacementError(404, "", ErrorCode.DEFAULT, {}, message);
}

export async function findProviderByUuid(q: Queryable, uuid: string): Promise<ProviderRow | undefined> {
  const rows = await q.select().from(resourceProviders).where(eq(resourceProviders.uuid, uuid)).limit(1);
  return rows[0];
}

/** The provider with `uuid`, or Placement's 404. */
export async function getProviderByUuid(q: Queryable, uuid: string): Promise<ProviderRow> {
  const row = await findProviderByUuid(q, uuid);
  if (!row) throw providerNotFound(uuid);
  return row;
}

/**
 * Locks the providers' rows until the transaction ends and returns them
 * (in id order). Every writer that locks more than one provider takes the
 * locks in ascending id order, so two writers can only ever wait on each
 * other in one direction and never deadlock on provider rows.
 */
export async function lockProvidersForUpdate(tx: Tx, ids: readonly number[]): Promise<ProviderRow[]> {
  if (ids.length === 0) return [];
  const unique = [...new Set(ids)];
  return tx
    .select()
    .from(resourceProviders)
    .where(inArray(resourceProviders.id, unique))
    .orderBy(asc(resourceProviders.id))
    .for("update");
}

/** Looks a provider up by uuid and locks its row (404 when it does not exist). */
export async function lockProviderByUuid(tx: Tx, uuid: string): Promise<ProviderRow> {
  const rows = await tx.select().from(resourceProviders).where(eq(resourceProviders.uuid, uuid)).for("update");
  if (!rows[0]) throw providerNotFound(uuid);
  return rows[0];
}

/** Placement's wording for a writer that sent a generation the provider no longer has. */
export const GENERATION_CONFLICT = "resource provider generation conflict";

/**
 * Bumps a provider's generation. With `expected`, it is a compare-and-bump:
 * the update only happens while the row still has that generation, and a
 * stale one is Placement's 409 `placement.concurrent_update`. Callers lock
 * the row first, so the compare cannot race; the WHERE is the safety net.
 * Returns the new generation.
 */
export async function bumpProviderGeneration(
  tx: Tx,
  id: number,
  expected?: number,
  conflictMessage: string = GENERATION_CONFLICT,
): Promise<number> {
  const condition =
    expected === undefined
      ? eq(resourceProviders.id, id)
      : sql`${resourceProviders.id} = ${id} AND ${resourceProviders.generation} = ${expected}`;
  const rows = await tx
    .update(resourceProviders)
    .set({ generation: sql`${resourceProviders.generation} + 1`, updatedAt: sql`now()` })
    .where(condition)
    .returning({ generation: resourceProviders.generation });
  if (!rows[0]) throw conflict(conflictMessage, ErrorCode.CONCURRENT_UPDATE);
  return rows[0].generation;
}

/** Throws the 409 unless the caller's generation is the provider's current one. */
export function checkGeneration(provider: ProviderRow, expected: number, conflictMessage: string = GENERATION_CONFLICT): void {
  if (provider.generation !== expected) throw conflict(conflictMessage, ErrorCode.CONCURRENT_UPDATE);
}
