/** The change feed tests' reader and the state a cache built from the feed must equal, read from the tables. */
import type { Harness } from "../support/harness.js";

export interface FeedChange {
  cursor: number;
  resource_provider_uuid: string;
  deleted: boolean;
  [field: string]: unknown;
}

/** What a HostState-like cache keeps per provider. */
export type HostMap = Map<string, Record<string, unknown>>;

export function apply(map: HostMap, change: FeedChange): void {
  const { cursor: _cursor, resource_provider_uuid: uuid, deleted, ...state } = change;
  if (deleted) map.delete(uuid);
  else map.set(uuid, state);
}

/** Every provider as the feed describes it, straight from the tables (not through the feed's own state function). */
export async function tablesState(t: { sql: Harness["sql"] }): Promise<HostMap> {
  const rows = await t.sql<{ uuid: string; state: Record<string, unknown> }>(`
    SELECT rp.uuid, json_build_object(
      'generation', rp.generation, 'name', rp.name, 'parent_provider_uuid', parent.uuid, 'root_provider_uuid', root.uuid,
      'inventories', (SELECT coalesce(json_object_agg(rc.name, json_build_object('total', i.total, 'reserved', i.reserved,
                        'min_unit', i.min_unit, 'max_unit', i.max_unit, 'step_size', i.step_size, 'allocation_ratio', i.allocation_ratio)), '{}')
                      FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.resource_provider_id = rp.id),
      'usages', (SELECT coalesce(json_object_agg(rc.name, (SELECT coalesce(sum(a.used), 0) FROM allocations a
                   WHERE a.resource_provider_id = rp.id AND a.resource_class_id = i.resource_class_id)), '{}')
                 FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.resource_provider_id = rp.id),
      'traits', (SELECT coalesce(json_agg(tr.name ORDER BY tr.name), '[]') FROM resource_provider_traits m JOIN traits tr ON tr.id = m.trait_id
                 WHERE m.resource_provider_id = rp.id),
      'aggregates', (SELECT coalesce(json_agg(ag.uuid ORDER BY ag.uuid), '[]') FROM resource_provider_aggregates m
                     JOIN aggregates ag ON ag.id = m.aggregate_id WHERE m.resource_provider_id = rp.id)) AS state
    FROM resource_providers rp
    LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id
    LEFT JOIN resource_providers root ON root.id = rp.root_provider_id`);
  return new Map(rows.map((r) => [r.uuid, r.state]));
}
