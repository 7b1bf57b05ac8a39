/**
 * The cloud view's two statements (cloud-view.ts): the full read of every
 * provider with the request's names, the cloud's shape and the feed's
 * place, and the delta of the providers changed since the copy's place. Both
 * send rows of one column list (COLUMNS), tagged with a kind (ROW), which
 * readRows turns into the names, the feed's place and the provider rows the
 * copy is made from. Providers' inventories come in inventory-text.ts's
 * format.
 */
import { SHAPE_ROW, SHAPE_ROWS, readShapeRow } from "../cloud-shape.js";
import { inventoryTextSql } from "./inventory-text.js";
import type { IdsByName } from "./names.js";

/**
 * Each row of the view's statements: (kind, id, text, inventories, trait
 * names, trait ids, aggregate ids), of one of these kinds (and SHAPE_ROWS').
 */
const ROW = {
  /** Every resource class: its id and name. */
  resourceClass: "resource_class",
  /** A trait the request asks for: its id and name. */
  trait: "trait",
  /** An aggregate the request asks for: its id and uuid. */
  aggregate: "aggregate",
  /** The number of providers, as the id (full reads). */
  providerCount: "provider_count",
  /** The snapshot's place in the feed: text "seq pruned_through started". */
  feed: "feed",
  /** A provider: text "uuid parentId rootId" (0 for none), its inventories in inventory-text.ts's format in class id order, traits, aggregates. */
  provider: "provider",
  /** A changed provider that no longer exists. */
  deleted: "deleted",
} as const;

/**
 * The columns of every row of the view's statements, in order, with the
 * type a row without a value for one sends (NULL of that type). Every SELECT
 * of the statements is built from this list (viewRow) and readRows reads by
 * it (AT).
 */
const COLUMNS = { kind: "text", id: "int", text: "text", inventories: "text", traitNames: "text", traitIds: "int[]", aggregateIds: "int[]" } as const;

type Column = keyof typeof COLUMNS;

const COLUMN_ORDER = Object.keys(COLUMNS) as Column[];

/** Each column's place in a row. */
const AT = Object.fromEntries(COLUMN_ORDER.map((c, i) => [c, i])) as Record<Column, number>;

/** SQL: a SELECT list of every column in order, from `values` (SQL expressions), NULL for the others. */
const viewRow = (values: Partial<Record<Column, string>>): string => COLUMN_ORDER.map((c) => values[c] ?? `NULL::${COLUMNS[c]}`).join(", ");

/** The rows naming classes, traits and aggregates (kind, id, text), to be read through viewRow. */
const NAMES_SQL = `SELECT '${ROW.resourceClass}' AS k, id, name::text AS s FROM resource_classes
      UNION ALL SELECT '${ROW.trait}', id, name::text FROM traits WHERE name = ANY($1::varchar[])
      UNION ALL SELECT '${ROW.aggregate}', id, uuid::text FROM aggregates WHERE uuid = ANY($2::varchar[])`;

/** The names' rows as view rows. */
const NAME_ROWS = viewRow({ kind: "k", id: "id", text: "s" });

const HEAD_SQL = `SELECT ${viewRow({
  kind: `'${ROW.feed}'`,
  id: "0",
  text: "(SELECT coalesce(max(seq), 0) FROM provider_changes) || ' ' || pruned_through || ' ' || pg_postmaster_start_time()::text",
})}
      FROM provider_changes_horizon WHERE id = 1`;

/** A provider's inventories in inventory-text.ts's format, in class id order, over rows `i`. */
const INVENTORIES_AGG = `string_agg(${inventoryTextSql("i")}, ' ' ORDER BY i.resource_class_id)`;

/** A provider row's text: its uuid, parent id and root id (0 for none). */
const PROVIDER_TEXT = `rp.uuid::text || ' ' || coalesce(rp.parent_provider_id, 0) || ' ' || coalesce(rp.root_provider_id, 0)`;

/** A provider row for the provider `rp`, one subquery each: for the few providers a delta reads. */
const PROVIDER_ROW = viewRow({
  kind: `'${ROW.provider}'`,
  id: "rp.id",
  text: PROVIDER_TEXT,
  inventories: `(SELECT ${INVENTORIES_AGG} FROM inventories i WHERE i.resource_provider_id = rp.id)`,
  traitNames: "(SELECT string_agg(t.name, ' ' ORDER BY t.id) FROM resource_provider_traits m JOIN traits t ON t.id = m.trait_id WHERE m.resource_provider_id = rp.id)",
  traitIds: "ARRAY(SELECT m.trait_id FROM resource_provider_traits m WHERE m.resource_provider_id = rp.id)",
  aggregateIds: "ARRAY(SELECT m.aggregate_id FROM resource_provider_aggregates m WHERE m.resource_provider_id = rp.id)",
});

/**
 * Every provider, unless there are more than $3 in a flat cloud or $4 in one
 * with trees or sharing (then only the names, the shape and the count). Each table is aggregated once and joined, not read by a subquery
 * per provider: that plan cost enough for PostgreSQL to compile it (JIT),
 * which took longer than running it.
 */
export const FULL_TEXT = `WITH names AS MATERIALIZED (
      ${NAMES_SQL}
      UNION ALL ${SHAPE_ROWS}
      UNION ALL SELECT '${ROW.providerCount}', count(*)::int, '' FROM resource_providers
    )
    SELECT ${NAME_ROWS} FROM names
    UNION ALL ${HEAD_SQL}
    UNION ALL SELECT ${viewRow({
      kind: `'${ROW.provider}'`,
      id: "rp.id",
      text: PROVIDER_TEXT,
      inventories: "inv.list",
      traitNames: "tr.names",
      traitIds: "coalesce(tr.ids, '{}')",
      aggregateIds: "coalesce(ag.ids, '{}')",
    })}
      FROM resource_providers rp
      LEFT JOIN (SELECT i.resource_provider_id AS id, ${INVENTORIES_AGG} AS list FROM inventories i GROUP BY 1) inv ON inv.id = rp.id
      LEFT JOIN (SELECT m.resource_provider_id AS id, string_agg(t.name, ' ' ORDER BY t.id) AS names, array_agg(m.trait_id) AS ids
                 FROM resource_provider_traits m JOIN traits t ON t.id = m.trait_id GROUP BY 1) tr ON tr.id = rp.id
      LEFT JOIN (SELECT m.resource_provider_id AS id, array_agg(m.aggregate_id) AS ids FROM resource_provider_aggregates m GROUP BY 1) ag ON ag.id = rp.id
      WHERE NOT EXISTS (SELECT 1 FROM names WHERE k = '${ROW.providerCount}'
                          AND id > CASE WHEN EXISTS (SELECT 1 FROM names WHERE k IN ('${SHAPE_ROW.nested}', '${SHAPE_ROW.sharing}')) THEN $4::int ELSE $3::int END)`;

/**
 * The providers changed after seq $3, with their rows now (a deleted row when gone).
 * The changed ids are one array (an InitPlan) so providers are read by
 * their primary key: joined to a CTE, PostgreSQL hashed every provider. The
 * gone ones are found by one probe of the key each (a scalar subquery): as
 * NOT EXISTS, on a cloud of a thousand providers PostgreSQL scanned and
 * hashed every provider to anti-join the handful that changed.
 */
export const DELTA_TEXT = `WITH changed AS MATERIALIZED (
      SELECT ARRAY(SELECT DISTINCT resource_provider_id FROM provider_changes
                   WHERE seq > $3::bigint AND seq <= (SELECT max(seq) FROM provider_changes)) AS ids
    )
    SELECT ${NAME_ROWS} FROM (${NAMES_SQL}) names
    UNION ALL ${HEAD_SQL}
    UNION ALL SELECT ${PROVIDER_ROW} FROM resource_providers rp WHERE rp.id = ANY((SELECT ids FROM changed)::int[])
    UNION ALL SELECT ${viewRow({ kind: `'${ROW.deleted}'`, id: "gone.id" })} FROM unnest((SELECT ids FROM changed)) AS gone(id)
      WHERE (SELECT rp.id FROM resource_providers rp WHERE rp.id = gone.id) IS NULL`;


export interface ProviderRow {
  id: number;
  text: string;
  inventories: string | null;
  traitNames: string | null;
  traitIds: number[];
  aggregateIds: number[];
}

export interface Rows {
  names: IdsByName;
  classNames: Map<number, string>;
  seq: number;
  prunedThrough: number;
  started: string;
  providers: ProviderRow[];
  deleted: number[];
  /** Every provider (full reads only). */
  providerCount: number;
}

export function readRows(rows: unknown[][]): Rows {
  const names: IdsByName = { resourceClasses: new Map(), traits: new Map(), aggregates: new Map(), treeRoots: new Map(), hasTrees: false, hasSharing: false };
  const out: Rows = { names, classNames: new Map(), seq: 0, prunedThrough: 0, started: "", providers: [], deleted: [], providerCount: 0 };
  for (const raw of rows) {
    const k = raw[AT.kind] as string;
    const id = raw[AT.id] as number;
    const s = raw[AT.text] as string | null;
    const inventories = raw[AT.inventories] as string | null;
    const traitNames = raw[AT.traitNames] as string | null;
    const traitIds = raw[AT.traitIds] as number[] | null;
    const aggregateIds = raw[AT.aggregateIds] as number[] | null;
    if (k === ROW.provider) out.providers.push({ id, text: s!, inventories, traitNames, traitIds: traitIds ?? [], aggregateIds: aggregateIds ?? [] });
    else if (k === ROW.resourceClass) {
      names.resourceClasses.set(s!, id);
      out.classNames.set(id, s!);
    } else if (k === ROW.trait) names.traits.set(s!, id);
    else if (k === ROW.aggregate) names.aggregates.set(s!, id);
    else if (k === ROW.deleted) out.deleted.push(id);
    else if (k === ROW.providerCount) out.providerCount = id;
    else if (k === ROW.feed) {
      const [seq, pruned, ...started] = s!.split(" ");
      out.seq = Number(seq);
      out.prunedThrough = Number(pruned);
      out.started = started.join(" ");
    } else readShapeRow(k, names);
  }
  return out;
}
