/**
 * Traits and the traits of a provider. Standard traits are seeded by the
 * migration; only CUSTOM_* traits may be created or deleted. Lists come back
 * in trait id (creation) order, the order Placement's results have on its
 * reference database. No in-memory cache: several processes share the table.
 */
import { and, asc, eq, sql, type SQL } from "drizzle-orm";
import type { Queryable, Tx } from "../db/database.js";
import { resourceProviderTraits, traits } from "../db/schema.js";
import { StandardNameImmutable, TraitInUse, TraitNotFound } from "./errors.js";
import { bumpProviderGeneration, checkGeneration, getProviderByUuid, lockProviderForNoKeyUpdate, type ProviderRow } from "./providers.js";
import { writeTransaction, type Store } from "./store.js";

export type TraitRow = typeof traits.$inferSelect;

export const CUSTOM_PREFIX = "CUSTOM_";

export interface TraitFilters {
  /** Only these names. */
  nameIn?: string[];
  /** Only names starting with this (taken literally, not as a LIKE pattern). */
  prefix?: string;
  /** true: only traits some provider has; false: only traits no provider has. */
  associated?: boolean;
}

const associatedWithAProvider = sql`EXISTS (SELECT 1 FROM ${resourceProviderTraits} WHERE ${resourceProviderTraits.traitId} = ${traits.id})`;

export async function listTraits(q: Queryable, filters: TraitFilters = {}): Promise<TraitRow[]> {
  const conditions: SQL[] = [];
  if (filters.nameIn) conditions.push(sql`${traits.name} = ANY(${sql.param(filters.nameIn)}::text[])`);
  if (filters.prefix !== undefined) conditions.push(sql`starts_with(${traits.name}, ${filters.prefix})`);
  if (filters.associated === true) conditions.push(associatedWithAProvider);
  if (filters.associated === false) conditions.push(sql`NOT ${associatedWithAProvider}`);
  return q
    .select()
    .from(traits)
    .where(and(...conditions))
    .orderBy(asc(traits.id));
}

/** The trait called `name`, or TraitNotFound. */
export async function getTrait(q: Queryable, name: string): Promise<TraitRow> {
  const rows = await q.select().from(traits).where(eq(traits.name, name)).limit(1);
  if (!rows[0]) throw new TraitNotFound([name]);
  return rows[0];
}

/** PUT /traits/{name}: creates the trait unless it exists (ON CONFLICT: a concurrent create is not an error). */
export async function ensureTrait(store: Store, name: string): Promise<{ trait: TraitRow; created: boolean }> {
  return writeTransaction(store, (tx) => ensureTraitIn(tx, name));
}

async function ensureTraitIn(tx: Tx, name: string): Promise<{ trait: TraitRow; created: boolean }> {
  const rows = await tx.insert(traits).values({ name }).onConflictDoNothing().returning();
  if (rows[0]) return { trait: rows[0], created: true };
  return { trait: await getTrait(tx, name), created: false };
}

/**
 * DELETE /traits/{name}. The trait row is locked first; setProviderTraits
 * key-share locks the traits it assigns, so an assignment either finished
 * before (and the in-use check sees it) or waits and then finds no trait.
 */
export async function deleteTrait(store: Store, name: string): Promise<void> {
  return writeTransaction(store, (tx) => deleteTraitIn(tx, name));
}

async function deleteTraitIn(tx: Tx, name: string): Promise<void> {
  const rows = await tx.select().from(traits).where(eq(traits.name, name)).for("update");
  const trait = rows[0];
  if (!trait) throw new TraitNotFound([name]);
  if (!name.startsWith(CUSTOM_PREFIX)) throw new StandardNameImmutable("trait", name, "delete");
  const used = await tx
    .select({ one: sql`1` })
    .from(resourceProviderTraits)
    .where(eq(resourceProviderTraits.traitId, trait.id))
    .limit(1);
  if (used.length > 0) throw new TraitInUse(name);
  await tx.delete(traits).where(eq(traits.id, trait.id));
}

/** GET /resource_providers/{uuid}/traits: the provider and its traits, in trait id order. */
export async function getProviderTraits(q: Queryable, uuid: string): Promise<{ provider: ProviderRow; traits: TraitRow[] }> {
  const provider = await getProviderByUuid(q, uuid, "list traits");
  return { provider, traits: await traitsOf(q, provider.id) };
}

async function traitsOf(q: Queryable, providerId: number): Promise<TraitRow[]> {
  return q
    .select({ id: traits.id, name: traits.name, createdAt: traits.createdAt, updatedAt: traits.updatedAt })
    .from(traits)
    .innerJoin(resourceProviderTraits, eq(resourceProviderTraits.traitId, traits.id))
    .where(eq(resourceProviderTraits.resourceProviderId, providerId))
    .orderBy(asc(traits.id));
}

/**
 * Replaces a provider's traits (PUT /resource_providers/{uuid}/traits, and
 * with `names` empty its DELETE). The provider row is locked before the
 * generation is compared, so of two writers sending the same generation the
 * second waits, then sees the bumped generation and gets the 409. A write
 * that changes nothing leaves the generation alone, as in Placement. With
 * `expectedGeneration` undefined (DELETE) no generation is compared.
 */
export async function setProviderTraits(
  store: Store,
  uuid: string,
  names: readonly string[],
  expectedGeneration?: number,
): Promise<{ provider: ProviderRow; traits: TraitRow[]; generation: number }> {
  return writeTransaction(store, (tx) => setProviderTraitsIn(tx, uuid, names, expectedGeneration));
}

async function setProviderTraitsIn(
  tx: Tx,
  uuid: string,
  names: readonly string[],
  expectedGeneration?: number,
): Promise<{ provider: ProviderRow; traits: TraitRow[]; generation: number }> {
  const provider = await lockProviderForNoKeyUpdate(tx, uuid);
  if (expectedGeneration !== undefined) checkGeneration(provider, expectedGeneration, "traits");

  // Names and ids travel as one array parameter each, so a body listing
  // thousands of traits cannot exceed PostgreSQL's limit on bind parameters.
  const wanted = [...new Set(names)];
  const found =
    wanted.length === 0
      ? []
      : await tx
          .select()
          .from(traits)
          .where(sql`${traits.name} = ANY(${sql.param(wanted)}::text[])`)
          .orderBy(asc(traits.id))
          .for("key share");
  const known = new Set(found.map((t) => t.name));
  const missing = wanted.filter((n) => !known.has(n));
  if (missing.length > 0) throw new TraitNotFound(missing, "provider traits");

  // Placement's _set_traits returns early when nothing is added or removed:
  // a no-op sync must not bump the generation (Nova would pay a 409 for it).
  const current = await traitsOf(tx, provider.id);
  if (current.length === found.length && current.every((t) => known.has(t.name))) {
    return { provider, traits: found, generation: provider.generation };
  }
  await tx.delete(resourceProviderTraits).where(eq(resourceProviderTraits.resourceProviderId, provider.id));
  if (found.length > 0) {
    const ids = found.map((t) => t.id);
    await tx.execute(
      sql`INSERT INTO ${resourceProviderTraits} (resource_provider_id, trait_id) SELECT ${provider.id}, unnest(${sql.param(ids)}::int[])`,
    );
  }
  const generation = await bumpProviderGeneration(tx, provider);
  return { provider, traits: found, generation };
}
