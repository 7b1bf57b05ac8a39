/**
 * Reading every table of an upstream Placement database (schema of
 * placement/db/sqlalchemy at alembic head) from the source snapshot.
 * Column names are the same in PostgreSQL and MySQL; only timestamps are
 * read through the dialect's text formatting. Numbers are converted here
 * because mysql2 and pg hand some of them back as strings.
 */
import type { InventoryData } from "../services/inventories.js";
import { SourceError, type SourceDatabase } from "./source.js";

/** Alembic revisions of Placement's schema, oldest first; the last one has consumer types. */
const KNOWN_REVISIONS = ["b4ed3a175331", "b5c396305c25", "611cd6dffd7b", "422ece571366"];
const HEAD = KNOWN_REVISIONS[KNOWN_REVISIONS.length - 1];

export interface Stamped {
  createdAt: string | null;
  updatedAt: string | null;
}
export interface NamedRow extends Stamped {
  id: number;
  name: string;
}
export interface ProviderRow extends Stamped {
  id: number;
  uuid: string;
  name: string;
  generation: number;
  parentId: number | null;
  rootId: number;
}
export interface InventoryRow extends Stamped, InventoryData {
  id: number;
  providerId: number;
  classId: number;
}
export interface UuidRow extends Stamped {
  id: number;
  uuid: string;
}
export interface ExternalRow extends Stamped {
  id: number;
  externalId: string;
}
export interface ConsumerRow extends Stamped {
  id: number;
  uuid: string;
  projectId: number;
  userId: number;
  typeId: number | null;
  generation: number;
}
export interface AllocationRow extends Stamped {
  id: number;
  providerId: number;
  consumerId: number;
  classId: number;
  used: number;
}
export interface Link {
  providerId: number;
  otherId: number;
}

export interface UpstreamData {
  revision: string;
  resourceClasses: NamedRow[];
  traits: NamedRow[];
  providers: ProviderRow[];
  inventories: InventoryRow[];
  providerTraits: Link[];
  aggregates: UuidRow[];
  providerAggregates: Link[];
  projects: ExternalRow[];
  users: ExternalRow[];
  consumerTypes: NamedRow[];
  consumers: ConsumerRow[];
  allocations: AllocationRow[];
}

export type TableName = Exclude<keyof UpstreamData, "revision">;

type Raw = Record<string, unknown>;
const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const str = (v: unknown): string => String(v);
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

export async function readUpstream(source: SourceDatabase, progress: (table: TableName, rows: number) => void): Promise<UpstreamData> {
  const revision = await schemaRevision(source);
  const ts = (table: string) => `${source.timestamp(`${table}.created_at`)} AS created_at, ${source.timestamp(`${table}.updated_at`)} AS updated_at`;
  const stamps = (r: Raw): Stamped => ({ createdAt: strOrNull(r.created_at), updatedAt: strOrNull(r.updated_at) });
  const read = async <T>(table: TableName, sql: string, map: (r: Raw) => T): Promise<T[]> => {
    const rows = (await source.rows<Raw>(sql)).map(map);
    progress(table, rows.length);
    return rows;
  };
  const named = (r: Raw): NamedRow => ({ id: num(r.id), name: str(r.name), ...stamps(r) });

  const resourceClasses = await read("resourceClasses", `SELECT id, name, ${ts("resource_classes")} FROM resource_classes ORDER BY id`, named);
  const traits = await read("traits", `SELECT id, name, ${ts("traits")} FROM traits ORDER BY id`, named);
  const providers = await read(
    "providers",
    `SELECT id, uuid, name, generation, parent_provider_id, root_provider_id, ${ts("resource_providers")} FROM resource_providers ORDER BY id`,
    (r) => {
      if (r.name === null) throw new SourceError(`resource provider ${str(r.uuid)} has no name; give it one through the API first`);
      return {
        id: num(r.id),
        uuid: str(r.uuid),
        name: str(r.name),
        generation: numOrNull(r.generation) ?? 0,
        parentId: numOrNull(r.parent_provider_id),
        // Alembic 611cd6dffd7b refuses to upgrade while a root is missing; a root of itself is what it means.
        rootId: numOrNull(r.root_provider_id) ?? num(r.id),
        ...stamps(r),
      };
    },
  );
  const inventories = await read(
    "inventories",
    `SELECT id, resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio, ${ts("inventories")} FROM inventories ORDER BY id`,
    (r) => ({
      id: num(r.id),
      providerId: num(r.resource_provider_id),
      classId: num(r.resource_class_id),
      total: num(r.total),
      reserved: num(r.reserved),
      minUnit: num(r.min_unit),
      maxUnit: num(r.max_unit),
      stepSize: num(r.step_size),
      allocationRatio: num(r.allocation_ratio),
      ...stamps(r),
    }),
  );
  const link = (other: string) => (r: Raw): Link => ({ providerId: num(r.resource_provider_id), otherId: num(r[other]) });
  const providerTraits = await read(
    "providerTraits",
    "SELECT resource_provider_id, trait_id FROM resource_provider_traits ORDER BY resource_provider_id, trait_id",
    link("trait_id"),
  );
  const aggregates = await read("aggregates", `SELECT id, uuid, ${ts("placement_aggregates")} FROM placement_aggregates ORDER BY id`, (r) => ({
    id: num(r.id),
    uuid: str(r.uuid),
    ...stamps(r),
  }));
  const providerAggregates = await read(
    "providerAggregates",
    "SELECT resource_provider_id, aggregate_id FROM resource_provider_aggregates ORDER BY resource_provider_id, aggregate_id",
    link("aggregate_id"),
  );
  const external = (r: Raw): ExternalRow => ({ id: num(r.id), externalId: str(r.external_id), ...stamps(r) });
  const projects = await read("projects", `SELECT id, external_id, ${ts("projects")} FROM projects ORDER BY id`, external);
  const users = await read("users", `SELECT id, external_id, ${ts("users")} FROM users ORDER BY id`, external);
  const consumerTypes = await read("consumerTypes", `SELECT id, name, ${ts("consumer_types")} FROM consumer_types ORDER BY id`, named);
  const consumers = await read(
    "consumers",
    `SELECT id, uuid, project_id, user_id, consumer_type_id, generation, ${ts("consumers")} FROM consumers ORDER BY id`,
    (r) => ({
      id: num(r.id),
      uuid: str(r.uuid),
      projectId: num(r.project_id),
      userId: num(r.user_id),
      typeId: numOrNull(r.consumer_type_id),
      generation: num(r.generation),
      ...stamps(r),
    }),
  );
  // Upstream's allocations name their consumer by uuid; ours by id.
  const allocations = await read(
    "allocations",
    `SELECT allocations.id, allocations.resource_provider_id, allocations.consumer_id AS consumer_uuid, consumers.id AS consumer_row,
            allocations.resource_class_id, allocations.used, ${ts("allocations")}
     FROM allocations LEFT JOIN consumers ON consumers.uuid = allocations.consumer_id ORDER BY allocations.id`,
    (r) => {
      if (r.consumer_row === null || r.consumer_row === undefined) {
        throw new SourceError(
          `allocation ${str(r.id)} belongs to consumer ${str(r.consumer_uuid)}, which has no consumers row; ` +
            "run `placement-manage db online_data_migrations` on the source first",
        );
      }
      return {
        id: num(r.id),
        providerId: num(r.resource_provider_id),
        consumerId: num(r.consumer_row),
        classId: num(r.resource_class_id),
        used: num(r.used),
        ...stamps(r),
      };
    },
  );
  return {
    revision,
    resourceClasses,
    traits,
    providers,
    inventories,
    providerTraits,
    aggregates,
    providerAggregates,
    projects,
    users,
    consumerTypes,
    consumers,
    allocations,
  };
}

async function schemaRevision(source: SourceDatabase): Promise<string> {
  let rows: { version_num: string }[];
  try {
    rows = await source.rows<{ version_num: string }>("SELECT version_num FROM alembic_version");
  } catch (err) {
    throw new SourceError(`${source.shown} does not look like a Placement database (no alembic_version table): ${(err as Error).message}`);
  }
  const revision = rows[0]?.version_num;
  if (!revision) throw new SourceError(`${source.shown}: alembic_version is empty; run \`placement-manage db sync\` on it first`);
  const at = KNOWN_REVISIONS.indexOf(revision);
  if (at >= 0 && revision !== HEAD) {
    throw new SourceError(
      `${source.shown} is at schema revision ${revision}, before consumer types (${HEAD}); upgrade it with \`placement-manage db sync\` first`,
    );
  }
  return revision;
}
