/**
 * The database schema: the single source from which drizzle-kit generates the
 * SQL migrations in drizzle/. Operators read these tables with psql, so names
 * are plain and every table carries a COMMENT (see the comments migration).
 *
 * Concurrency model in one paragraph: every write that changes what a provider
 * offers or what is consumed from it bumps `resource_providers.generation` in
 * the same transaction, and every write to a consumer's allocations bumps
 * `consumers.generation`. Writers lock the rows they change (consumers FOR
 * UPDATE in uuid order first, then providers FOR NO KEY UPDATE in id order,
 * then the inventory rows whose `used` the write changes FOR UPDATE, in id
 * order and all at once), so two writers can never both succeed from the
 * same generation and never deadlock.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  check,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  timestamp,
  unique,
  varchar,
  type AnyPgColumn,
} from "drizzle-orm/pg-core";

const timestamps = {
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }),
};

/** Standard classes keep the ids 0..N of the reference list; custom classes start at 10000, as in Placement. */
export const resourceClasses = pgTable("resource_classes", {
  id: integer("id").primaryKey().generatedByDefaultAsIdentity({ startWith: 10000 }),
  name: varchar("name", { length: 255 }).notNull().unique(),
  ...timestamps,
});

export const traits = pgTable("traits", {
  id: integer("id").primaryKey().generatedByDefaultAsIdentity(),
  name: varchar("name", { length: 255 }).notNull().unique(),
  ...timestamps,
});

export const resourceProviders = pgTable(
  "resource_providers",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    uuid: varchar("uuid", { length: 36 }).notNull().unique(),
    name: varchar("name", { length: 200 }).notNull().unique(),
    generation: integer("generation").notNull().default(0),
    parentProviderId: integer("parent_provider_id").references((): AnyPgColumn => resourceProviders.id),
    rootProviderId: integer("root_provider_id").references((): AnyPgColumn => resourceProviders.id),
    ...timestamps,
  },
  (t) => [
    index("resource_providers_parent_provider_id_idx").on(t.parentProviderId),
    index("resource_providers_root_provider_id_idx").on(t.rootProviderId),
    check("resource_providers_generation_nonnegative", sql`${t.generation} >= 0`),
  ],
);

export const inventories = pgTable(
  "inventories",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    resourceProviderId: integer("resource_provider_id")
      .notNull()
      .references(() => resourceProviders.id, { onDelete: "cascade" }),
    resourceClassId: integer("resource_class_id")
      .notNull()
      .references(() => resourceClasses.id),
    total: integer("total").notNull(),
    reserved: integer("reserved").notNull().default(0),
    minUnit: integer("min_unit").notNull().default(1),
    maxUnit: integer("max_unit").notNull(),
    stepSize: integer("step_size").notNull().default(1),
    allocationRatio: doublePrecision("allocation_ratio").notNull().default(1),
    /**
     * Units allocated from this inventory: always the sum of `allocations.used`
     * for the same provider and class, kept by triggers on both tables (see the
     * inventory_usage_triggers migration), so reads need not sum allocations.
     */
    used: bigint("used", { mode: "number" }).notNull().default(0),
    ...timestamps,
  },
  (t) => [
    unique("inventories_provider_class_unique").on(t.resourceProviderId, t.resourceClassId),
    index("inventories_resource_class_id_idx").on(t.resourceClassId, t.resourceProviderId),
    check("inventories_total_positive", sql`${t.total} >= 1`),
    check("inventories_reserved_range", sql`${t.reserved} >= 0 AND ${t.reserved} <= ${t.total}`),
    check("inventories_units_positive", sql`${t.minUnit} >= 1 AND ${t.maxUnit} >= 1 AND ${t.stepSize} >= 1`),
    check("inventories_used_nonnegative", sql`${t.used} >= 0`),
  ],
);

export const resourceProviderTraits = pgTable(
  "resource_provider_traits",
  {
    resourceProviderId: integer("resource_provider_id")
      .notNull()
      .references(() => resourceProviders.id, { onDelete: "cascade" }),
    traitId: integer("trait_id")
      .notNull()
      .references(() => traits.id),
  },
  (t) => [
    primaryKey({ columns: [t.resourceProviderId, t.traitId] }),
    index("resource_provider_traits_trait_id_idx").on(t.traitId),
  ],
);

export const aggregates = pgTable("aggregates", {
  id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
  uuid: varchar("uuid", { length: 36 }).notNull().unique(),
  ...timestamps,
});

export const resourceProviderAggregates = pgTable(
  "resource_provider_aggregates",
  {
    resourceProviderId: integer("resource_provider_id")
      .notNull()
      .references(() => resourceProviders.id, { onDelete: "cascade" }),
    aggregateId: integer("aggregate_id")
      .notNull()
      .references(() => aggregates.id),
  },
  (t) => [
    primaryKey({ columns: [t.resourceProviderId, t.aggregateId] }),
    index("resource_provider_aggregates_aggregate_id_idx").on(t.aggregateId),
  ],
);

export const projects = pgTable("projects", {
  id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
  externalId: varchar("external_id", { length: 255 }).notNull().unique(),
  ...timestamps,
});

export const users = pgTable("users", {
  id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
  externalId: varchar("external_id", { length: 255 }).notNull().unique(),
  ...timestamps,
});

export const consumerTypes = pgTable("consumer_types", {
  id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
  name: varchar("name", { length: 255 }).notNull().unique(),
  ...timestamps,
});

export const consumers = pgTable(
  "consumers",
  {
    id: integer("id").primaryKey().generatedAlwaysAsIdentity(),
    uuid: varchar("uuid", { length: 36 }).notNull().unique(),
    projectId: integer("project_id")
      .notNull()
      .references(() => projects.id),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    consumerTypeId: integer("consumer_type_id").references(() => consumerTypes.id),
    generation: integer("generation").notNull().default(0),
    ...timestamps,
  },
  (t) => [
    index("consumers_project_user_idx").on(t.projectId, t.userId),
    index("consumers_consumer_type_id_idx").on(t.consumerTypeId),
  ],
);

export const allocations = pgTable(
  "allocations",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    resourceProviderId: integer("resource_provider_id")
      .notNull()
      .references(() => resourceProviders.id),
    consumerId: integer("consumer_id")
      .notNull()
      .references(() => consumers.id),
    resourceClassId: integer("resource_class_id")
      .notNull()
      .references(() => resourceClasses.id),
    used: integer("used").notNull(),
    /**
     * The consumer's project, user and type, copied from consumers by triggers on both tables
     * (drizzle/0013), so GET /usages reads one range of allocations_owner_usage_idx instead of
     * every consumer of the project and then each one's allocations. No foreign keys: they are
     * copies of columns that have theirs.
     */
    projectId: integer("project_id"),
    userId: integer("user_id"),
    consumerTypeId: integer("consumer_type_id"),
    ...timestamps,
  },
  (t) => [
    unique("allocations_consumer_provider_class_unique").on(t.consumerId, t.resourceProviderId, t.resourceClassId),
    // Every column GET /usages reads, so it is answered from the index alone.
    index("allocations_owner_usage_idx").on(t.projectId, t.userId, t.consumerTypeId, t.resourceClassId, t.consumerId, t.used),
    index("allocations_provider_class_idx").on(t.resourceProviderId, t.resourceClassId),
    index("allocations_resource_class_id_idx").on(t.resourceClassId),
    check("allocations_used_positive", sql`${t.used} >= 1`),
  ],
);

/**
 * The change feed (GET /changes, an extension): one row per provider changed
 * by a committed transaction. Triggers on providers, inventories (whose
 * `used` follows every allocation), traits and aggregates insert the row with
 * the writing transaction's id; at commit a deferred trigger, serialised by an
 * advisory lock, gives every row of the transaction the next `seq` and the
 * provider's state as it stands then (migration change_feed explains why that
 * is commit order). Rows of aborted transactions vanish with them.
 */
export const providerChanges = pgTable(
  "provider_changes",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    /** The writing transaction (pg_current_xact_id()): rows of one transaction are sequenced together. */
    txid: bigint("txid", { mode: "number" }).notNull(),
    /** Commit order; NULL until the writing transaction commits. */
    seq: bigint("seq", { mode: "number" }),
    /** No foreign key: the row outlives a deleted provider. */
    resourceProviderId: integer("resource_provider_id").notNull(),
    resourceProviderUuid: varchar("resource_provider_uuid", { length: 36 }),
    /** The provider's state after the transaction (null when it was deleted), set with seq. */
    state: jsonb("state"),
  },
  (t) => [unique("provider_changes_txid_provider_unique").on(t.txid, t.resourceProviderId), index("provider_changes_seq_idx").on(t.seq)],
);

/** One row: how much of the feed is kept, and the highest seq whose rows are gone (a cursor below it must resync). */
export const providerChangesHorizon = pgTable(
  "provider_changes_horizon",
  {
    id: integer("id").primaryKey().default(1),
    prunedThrough: bigint("pruned_through", { mode: "number" }).notNull().default(0),
    /** Seqs kept: rows more than this many seqs behind the newest are deleted. */
    retention: bigint("retention", { mode: "number" }).notNull().default(100000),
    /** Pruning runs in the transaction that takes every prune_every-th seq. */
    pruneEvery: integer("prune_every").notNull().default(1000),
  },
  (t) => [
    check("provider_changes_horizon_one_row", sql`${t.id} = 1`),
    check("provider_changes_horizon_retention_positive", sql`${t.retention} >= 1`),
    check("provider_changes_horizon_prune_every_positive", sql`${t.pruneEvery} >= 1`),
  ],
);
