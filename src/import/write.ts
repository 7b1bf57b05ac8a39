/**
 * Writing upstream's rows into our empty schema, inside the caller's
 * transaction, keeping every id so lists come out in the same order as
 * upstream's (both order by id) and every generation exactly.
 *
 * Our triggers stay on and do their work: inventories are written before
 * the allocations, whose statement trigger then adds each consumer's usage
 * to inventories.used, and every write is noted in the change feed.
 */
import type pg from "pg";
import type { TableName, UpstreamData } from "./read.js";

/** Rows per INSERT: large enough that a big cloud needs few round trips, small enough for one message. */
const BATCH = 5000;

interface Column {
  name: string;
  type: "int" | "bigint" | "text" | "float8" | "timestamp" | "created";
}

export async function assertEmpty(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ what: string; n: number }>(`
    SELECT 'resource providers' AS what, count(*)::int AS n FROM resource_providers
    UNION ALL SELECT 'consumers', count(*)::int FROM consumers
    UNION ALL SELECT 'allocations', count(*)::int FROM allocations
    UNION ALL SELECT 'aggregates', count(*)::int FROM aggregates
    UNION ALL SELECT 'projects', count(*)::int FROM projects
    UNION ALL SELECT 'users', count(*)::int FROM users
    UNION ALL SELECT 'consumer types', count(*)::int FROM consumer_types
    UNION ALL SELECT 'custom resource classes', count(*)::int FROM resource_classes WHERE id >= 10000
    UNION ALL SELECT 'custom traits', count(*)::int FROM traits WHERE name LIKE 'CUSTOM\\_%'`);
  const found = rows.filter((r) => r.n > 0);
  if (found.length > 0) {
    throw new ImportRefused(
      `the target database is not empty (${found.map((r) => `${r.n} ${r.what}`).join(", ")}): ` +
        "import only into a freshly created database",
    );
  }
}

export class ImportRefused extends Error {}

export async function writeUpstream(
  client: pg.ClientBase,
  data: UpstreamData,
  progress: (table: TableName, rows: number) => void,
): Promise<void> {
  // Writers wait until we commit; readers see the empty database until then.
  await client.query(
    "LOCK TABLE resource_classes, traits, resource_providers, inventories, resource_provider_traits, aggregates, " +
      "resource_provider_aggregates, projects, users, consumer_types, consumers, allocations IN EXCLUSIVE MODE",
  );
  await assertEmpty(client);
  const classIds = await writeResourceClasses(client, data);
  progress("resourceClasses", data.resourceClasses.length);
  await writeTraits(client, data);
  progress("traits", data.traits.length);

  const stamps = (r: { createdAt: string | null; updatedAt: string | null }) => [r.createdAt, r.updatedAt];
  const stampColumns: Column[] = [
    { name: "created_at", type: "created" },
    { name: "updated_at", type: "timestamp" },
  ];
  // Parents and roots are set once every provider exists: a provider may have been moved under a newer one.
  await insert(client, "resource_providers", [col("id", "int"), col("uuid", "text"), col("name", "text"), col("generation", "int"), ...stampColumns],
    data.providers.map((p) => [p.id, p.uuid, p.name, p.generation, ...stamps(p)]));
  await client.query(
    `UPDATE resource_providers p SET parent_provider_id = t.parent, root_provider_id = t.root
     FROM unnest($1::int[], $2::int[], $3::int[]) AS t(id, parent, root) WHERE p.id = t.id`,
    [data.providers.map((p) => p.id), data.providers.map((p) => p.parentId), data.providers.map((p) => p.rootId)],
  );
  progress("providers", data.providers.length);

  await insert(client, "resource_provider_traits", [col("resource_provider_id", "int"), col("trait_id", "int")],
    data.providerTraits.map((l) => [l.providerId, l.otherId]), false);
  progress("providerTraits", data.providerTraits.length);

  const classOf = (id: number) => {
    const mapped = classIds.get(id);
    if (mapped === undefined) throw new ImportRefused(`the source refers to resource class id ${id}, which it does not have`);
    return mapped;
  };
  await insert(client, "inventories", [
    col("id", "int"), col("resource_provider_id", "int"), col("resource_class_id", "int"), col("total", "int"), col("reserved", "int"),
    col("min_unit", "int"), col("max_unit", "int"), col("step_size", "int"), col("allocation_ratio", "float8"), ...stampColumns,
  ], data.inventories.map((i) => [
    i.id, i.providerId, classOf(i.classId), i.total, i.reserved, i.minUnit, i.maxUnit, i.stepSize, i.allocationRatio, ...stamps(i),
  ]));
  progress("inventories", data.inventories.length);

  await insert(client, "aggregates", [col("id", "int"), col("uuid", "text"), ...stampColumns],
    data.aggregates.map((a) => [a.id, a.uuid, ...stamps(a)]));
  progress("aggregates", data.aggregates.length);
  await insert(client, "resource_provider_aggregates", [col("resource_provider_id", "int"), col("aggregate_id", "int")],
    data.providerAggregates.map((l) => [l.providerId, l.otherId]), false);
  progress("providerAggregates", data.providerAggregates.length);

  for (const [table, rows, key] of [["projects", data.projects, "projects"], ["users", data.users, "users"]] as const) {
    await insert(client, table, [col("id", "int"), col("external_id", "text"), ...stampColumns], rows.map((r) => [r.id, r.externalId, ...stamps(r)]));
    progress(key, rows.length);
  }
  await insert(client, "consumer_types", [col("id", "int"), col("name", "text"), ...stampColumns],
    data.consumerTypes.map((t) => [t.id, t.name, ...stamps(t)]));
  progress("consumerTypes", data.consumerTypes.length);
  await insert(client, "consumers", [
    col("id", "int"), col("uuid", "text"), col("project_id", "int"), col("user_id", "int"), col("consumer_type_id", "int"),
    col("generation", "int"), ...stampColumns,
  ], data.consumers.map((c) => [c.id, c.uuid, c.projectId, c.userId, c.typeId, c.generation, ...stamps(c)]));
  progress("consumers", data.consumers.length);

  let done = 0;
  for (let at = 0; at < data.allocations.length; at += BATCH) {
    const chunk = data.allocations.slice(at, at + BATCH);
    await insert(client, "allocations", [
      col("id", "bigint"), col("resource_provider_id", "int"), col("consumer_id", "int"), col("resource_class_id", "int"),
      col("used", "int"), ...stampColumns,
    ], chunk.map((a) => [a.id, a.providerId, a.consumerId, classOf(a.classId), a.used, ...stamps(a)]));
    done += chunk.length;
    progress("allocations", done);
  }

  // New rows made through the API after the switch continue after upstream's ids.
  for (const table of ["resource_classes", "traits", "resource_providers", "inventories", "aggregates", "projects", "users", "consumer_types", "consumers", "allocations"]) {
    await client.query(
      `SELECT setval(pg_get_serial_sequence('${table}', 'id'), GREATEST((SELECT max(id) FROM ${table}), ${table === "resource_classes" ? 9999 : 0}) + 1, false)`,
    );
  }
}

/**
 * Resource classes: the standard ones are ours already (same names, same
 * ids 0..N); upstream's custom classes (ids from 10000) keep their ids.
 * Returns upstream id -> our id.
 */
async function writeResourceClasses(client: pg.ClientBase, data: UpstreamData): Promise<Map<number, number>> {
  const { rows } = await client.query<{ id: number; name: string }>("SELECT id, name FROM resource_classes");
  const ours = new Map(rows.map((r) => [r.name, r.id]));
  const taken = new Set(rows.map((r) => r.id));
  const mapping = new Map<number, number>();
  for (const rc of data.resourceClasses) {
    const existing = ours.get(rc.name);
    if (existing !== undefined) {
      mapping.set(rc.id, existing);
      continue;
    }
    // A custom class, or a standard one from a newer os-resource-classes than ours: keep its id when free.
    const { rows: inserted } = await client.query<{ id: number }>(
      taken.has(rc.id)
        ? "INSERT INTO resource_classes (name, created_at, updated_at) VALUES ($2, coalesce($3::timestamp AT TIME ZONE 'UTC', now()), $4::timestamp AT TIME ZONE 'UTC') RETURNING id"
        : "INSERT INTO resource_classes (id, name, created_at, updated_at) VALUES ($1, $2, coalesce($3::timestamp AT TIME ZONE 'UTC', now()), $4::timestamp AT TIME ZONE 'UTC') RETURNING id",
      [rc.id, rc.name, rc.createdAt, rc.updatedAt],
    );
    mapping.set(rc.id, inserted[0].id);
    taken.add(inserted[0].id);
  }
  return mapping;
}

/**
 * Traits are replaced by upstream's with their ids (the target has no
 * provider traits yet), so trait lists come out in upstream's order; our
 * standard traits upstream lacks are added after them.
 */
async function writeTraits(client: pg.ClientBase, data: UpstreamData): Promise<void> {
  const { rows: ours } = await client.query<{ name: string }>("SELECT name FROM traits ORDER BY id");
  await client.query("DELETE FROM traits");
  await insert(client, "traits", [col("id", "int"), col("name", "text"), { name: "created_at", type: "created" }, { name: "updated_at", type: "timestamp" }],
    data.traits.map((t) => [t.id, t.name, t.createdAt, t.updatedAt]), false);
  await client.query("SELECT setval(pg_get_serial_sequence('traits', 'id'), coalesce((SELECT max(id) FROM traits), 0) + 1, false)");
  const upstream = new Set(data.traits.map((t) => t.name));
  const missing = ours.map((r) => r.name).filter((n) => !upstream.has(n));
  if (missing.length > 0) await client.query("INSERT INTO traits (name) SELECT unnest($1::text[])", [missing]);
}

function col(name: string, type: Column["type"]): Column {
  return { name, type };
}

/** One INSERT ... SELECT FROM unnest(...) per call: every column travels as one array parameter. */
async function insert(client: pg.ClientBase, table: string, columns: Column[], rows: unknown[][], hasIdentity = true): Promise<void> {
  if (rows.length === 0) return;
  for (let at = 0; at < rows.length; at += BATCH) {
    const chunk = rows.slice(at, at + BATCH);
    const arrays = columns.map((_, i) => chunk.map((r) => r[i]));
    const params = columns.map((c, i) => `$${i + 1}::${c.type === "created" || c.type === "timestamp" ? "timestamp" : c.type}[]`);
    const names = columns.map((_, i) => `c${i}`);
    const select = columns.map((c, i) => {
      if (c.type === "created") return `coalesce(c${i} AT TIME ZONE 'UTC', now())`;
      if (c.type === "timestamp") return `c${i} AT TIME ZONE 'UTC'`;
      return `c${i}`;
    });
    await client.query(
      `INSERT INTO ${table} (${columns.map((c) => c.name).join(", ")}) ${hasIdentity ? "OVERRIDING SYSTEM VALUE " : ""}` +
        `SELECT ${select.join(", ")} FROM unnest(${params.join(", ")}) AS t(${names.join(", ")})`,
      arrays,
    );
  }
}
