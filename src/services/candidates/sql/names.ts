/**
 * The names a request gives, looked up in one round trip with the cloud's
 * shape (cloud-shape.ts): index scans of the name and uuid keys, and
 * resource_providers_parent_provider_id_idx with LIMIT 1 for the shape.
 */
import { sql } from "drizzle-orm";
import type { Queryable } from "../../../db/database.js";
import { readShapeRow, SHAPE_ROWS, type CloudShape } from "../cloud-shape.js";
import { namedRows } from "./statement.js";

/** The ids of the names a request gives (each map absent the unknown ones), and the cloud's shape. */
export interface IdsByName extends CloudShape {
  resourceClasses: Map<string, number>;
  traits: Map<string, number>;
  aggregates: Map<string, number>;
  /** in_tree provider uuid to its root's id. */
  treeRoots: Map<string, number>;
}

/** The kinds of the rows naming classes, traits, aggregates and in_tree providers (lookupNames, memberships). */
export const NAME_ROW = { resourceClass: "resource_class", trait: "trait", aggregate: "aggregate", treeRoot: "tree_root" } as const;

/** Ids of the named classes, traits, aggregates and in_tree providers, and the cloud's shape, in one round trip. */
export async function lookupNames(
  tx: Queryable,
  classes: string[],
  traitNames: string[],
  aggregateUuids: string[],
  inTreeUuids: string[] = [],
): Promise<IdsByName> {
  const found = await namedRows<{ kind: string; id: number; name: string }>(
    tx,
    "ac_lookup_names",
    sql`SELECT ${sql.raw(`'${NAME_ROW.resourceClass}'`)} AS kind, id, name FROM resource_classes WHERE name = ANY(${sql.param(classes)}::varchar[])
        UNION ALL SELECT ${sql.raw(`'${NAME_ROW.trait}'`)}, id, name FROM traits WHERE name = ANY(${sql.param(traitNames)}::varchar[])
        UNION ALL SELECT ${sql.raw(`'${NAME_ROW.aggregate}'`)}, id, uuid FROM aggregates WHERE uuid = ANY(${sql.param(aggregateUuids)}::varchar[])
        UNION ALL SELECT ${sql.raw(`'${NAME_ROW.treeRoot}'`)}, root_provider_id, uuid FROM resource_providers WHERE uuid = ANY(${sql.param(inTreeUuids)}::varchar[])
        UNION ALL ${sql.raw(SHAPE_ROWS)}`,
  );
  const out: IdsByName = {
    resourceClasses: new Map(),
    traits: new Map(),
    aggregates: new Map(),
    treeRoots: new Map(),
    hasTrees: false,
    hasSharing: false,
  };
  for (const r of found) {
    if (r.kind === NAME_ROW.resourceClass) out.resourceClasses.set(r.name, r.id);
    else if (r.kind === NAME_ROW.trait) out.traits.set(r.name, r.id);
    else if (r.kind === NAME_ROW.aggregate) out.aggregates.set(r.name, r.id);
    else if (r.kind === NAME_ROW.treeRoot) out.treeRoots.set(r.name, r.id);
    else readShapeRow(r.kind, out);
  }
  return out;
}

