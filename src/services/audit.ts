/**
 * What `placement audit` and `placement status` look for: states the API
 * allows to arise (an inventory, `reserved` or `allocation_ratio` lowered
 * under existing allocations) or that a client left behind (a failed move's
 * MIGRATION consumer, lp#1707071's doubled allocations, consumers Nova no
 * longer knows). Reads are plain queries outside any transaction: an audit
 * reports, it never blocks the API. The one write, deleteConsumerIfUnchanged,
 * loses to any concurrent write of that consumer.
 */
import { sql } from "drizzle-orm";
import type { Queryable } from "../db/database.js";
import { deleteConsumersWithoutAllocations, lockConsumers } from "./consumers.js";
import { capacitySql, overCapacitySql } from "./rules/capacity.js";
import { writeTransaction, type Store } from "./store.js";

/** Providers that share through aggregates: an instance may legitimately allocate from one beside its own tree. */
const SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE";

export type OverCapacity = {
  provider_uuid: string;
  provider_name: string;
  resource_class: string;
  used: number;
  capacity: number;
};

/** Inventories whose allocations exceed their capacity (rules/capacity.ts, as every write checks it). */
export async function overCapacity(q: Queryable): Promise<OverCapacity[]> {
  const res = await q.execute<OverCapacity>(sql`
    SELECT rp.uuid AS provider_uuid, rp.name AS provider_name, rc.name AS resource_class, i.used,
           ${sql.raw(capacitySql("i"))} AS capacity
    FROM inventories i
    JOIN resource_providers rp ON rp.id = i.resource_provider_id
    JOIN resource_classes rc ON rc.id = i.resource_class_id
    WHERE ${sql.raw(overCapacitySql("i"))}
    ORDER BY rp.uuid, rc.name`);
  return res.rows;
}

export type HeldConsumer = {
  consumer_uuid: string;
  consumer_type: string | null;
  generation: number;
  /** Seconds since the consumer's allocations were last written. */
  age_seconds: number;
  providers: string[];
};

const HELD = sql`
  SELECT c.uuid AS consumer_uuid, ct.name AS consumer_type, c.generation,
         floor(extract(epoch FROM now() - COALESCE(c.updated_at, c.created_at)))::bigint AS age_seconds,
         array_agg(DISTINCT rp.uuid ORDER BY rp.uuid) AS providers
  FROM consumers c
  JOIN allocations a ON a.consumer_id = c.id
  JOIN resource_providers rp ON rp.id = a.resource_provider_id
  LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id`;

/** MIGRATION consumers still holding allocations after `olderThanSeconds`: leftovers of failed moves. */
export async function staleMigrations(q: Queryable, olderThanSeconds: number): Promise<HeldConsumer[]> {
  const res = await q.execute<HeldConsumer>(sql`${HELD}
    WHERE ct.name = 'MIGRATION' AND COALESCE(c.updated_at, c.created_at) < now() - make_interval(secs => ${olderThanSeconds})
    GROUP BY c.id, ct.name ORDER BY c.uuid`);
  return res.rows;
}

export type MultiRootConsumer = {
  consumer_uuid: string;
  consumer_type: string | null;
  roots: string[];
};

/**
 * Consumers that are not migrations but hold allocations in more than one
 * provider tree (sharing providers aside): the doubled allocations a move
 * leaves when the source's are not cleaned up (lp#1707071).
 */
export async function multiRootConsumers(q: Queryable): Promise<MultiRootConsumer[]> {
  const res = await q.execute<MultiRootConsumer>(sql`
    SELECT c.uuid AS consumer_uuid, ct.name AS consumer_type, array_agg(DISTINCT root.uuid ORDER BY root.uuid) AS roots
    FROM consumers c
    JOIN allocations a ON a.consumer_id = c.id
    JOIN resource_providers rp ON rp.id = a.resource_provider_id
    JOIN resource_providers root ON root.id = COALESCE(rp.root_provider_id, rp.id)
    LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
    WHERE ct.name IS DISTINCT FROM 'MIGRATION'
      AND NOT EXISTS (
        SELECT 1 FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
        WHERE rpt.resource_provider_id = rp.id AND t.name = ${SHARING_TRAIT})
    GROUP BY c.id, ct.name
    HAVING count(DISTINCT root.id) > 1
    ORDER BY c.uuid`);
  return res.rows;
}

export type IncompleteConsumer = {
  consumer_uuid: string;
  project_id: string;
  user_id: string;
};

/** Consumers written before microversion 1.8, still carrying the placeholder project or user. */
export async function incompleteConsumers(q: Queryable, placeholder: { projectId: string; userId: string }): Promise<IncompleteConsumer[]> {
  const res = await q.execute<IncompleteConsumer>(sql`
    SELECT c.uuid AS consumer_uuid, p.external_id AS project_id, u.external_id AS user_id
    FROM consumers c JOIN projects p ON p.id = c.project_id JOIN users u ON u.id = c.user_id
    WHERE p.external_id = ${placeholder.projectId} OR u.external_id = ${placeholder.userId}
    ORDER BY c.uuid`);
  return res.rows;
}

export type ProviderWithoutInventory = {
  provider_uuid: string;
  provider_name: string;
  /** A provider with children may carry nothing itself (a compute node whose NUMA cells hold the inventory). */
  children: number;
};

export async function providersWithoutInventory(q: Queryable): Promise<ProviderWithoutInventory[]> {
  const res = await q.execute<ProviderWithoutInventory>(sql`
    SELECT rp.uuid AS provider_uuid, rp.name AS provider_name,
           (SELECT count(*) FROM resource_providers ch WHERE ch.parent_provider_id = rp.id)::int AS children
    FROM resource_providers rp
    WHERE NOT EXISTS (SELECT 1 FROM inventories i WHERE i.resource_provider_id = rp.id)
    ORDER BY rp.uuid`);
  return res.rows;
}

/** Consumers holding allocations whose uuid is not in `known` (the instances and migrations Nova knows). */
export async function orphanedConsumers(q: Queryable, known: readonly string[]): Promise<HeldConsumer[]> {
  const res = await q.execute<HeldConsumer>(sql`${HELD}
    WHERE NOT (c.uuid = ANY(${sql.param([...known])}::text[]))
    GROUP BY c.id, ct.name ORDER BY c.uuid`);
  return res.rows;
}

export type OrphanDeletion = "deleted" | "changed" | "gone";

/**
 * Deletes a consumer and its allocations if it still has the generation the
 * audit saw. The consumer row is locked first, as every allocation write
 * locks it, so a write that got there first has bumped the generation and
 * this answers "changed" (the write wins); a write that comes after waits
 * and then finds the consumer new. Freeing usage needs no provider locks
 * (as DELETE /allocations).
 */
export async function deleteConsumerIfUnchanged(store: Store, uuid: string, generation: number): Promise<OrphanDeletion> {
  return writeTransaction(
    store,
    async (tx) => {
      const consumer = (await lockConsumers(tx, [uuid])).get(uuid);
      if (!consumer) return "gone";
      if (consumer.generation !== generation) return "changed";
      await tx.execute(sql`DELETE FROM allocations WHERE consumer_id = ${consumer.id}`);
      await deleteConsumersWithoutAllocations(tx, [consumer.id]);
      return "deleted";
    },
    { retries: store.allocationRetries },
  );
}
