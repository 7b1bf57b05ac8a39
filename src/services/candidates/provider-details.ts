/**
 * The part of a provider summary that changes only when the provider's
 * inventories or traits change: its uuid, each inventory's capacity and its
 * traits. Triggers give every inventory row a `details_version` that grows
 * whenever the provider's inventories or traits change, by any path (the
 * provider_details_version migration), so a copy kept under the key "count of
 * its inventory rows, largest details_version" is exact for as long as the
 * database returns that key. The flat statement computes each candidate's key
 * from the very rows it aggregates to filter, in the same snapshot as its
 * usage, and only candidates whose key changed are read again. This is not a
 * view of the cloud kept in memory: which providers are candidates, and their
 * usage, are decided by the database at every request; the copy only spares
 * reading and formatting again, at every request, inventories and traits that
 * did not change, which is a large share of the statement's work when many
 * providers match.
 *
 * The versions are wall-clock microseconds (or the largest + 1 when the
 * clock is behind), so a database restored from a backup under a running
 * server cannot hand out a key the copy already has for other contents.
 * Usage is never kept: it changes with every claim and every DELETE.
 */
import type pg from "pg";
import { capacitySql } from "../rules/capacity.js";

export interface ProviderDetails {
  uuid: string;
  /** [resource class id, capacity] per inventory, in class id order. */
  inventories: ReadonlyArray<readonly [number, number]>;
  /** Trait names in id order, space-separated (trait names are [A-Z0-9_]+). */
  traits: string;
}

/** What a statement needs to run: a pool or one client inside a transaction. */
export type Runner = Pick<pg.PoolClient, "query">;

/** Above this many entries the copy starts again empty (a bound on memory: ~300 bytes per provider). */
const MAX_ENTRIES = 200_000;

/**
 * The SQL text of a provider's key, an aggregate over its inventory rows
 * (`alias`); both statements must write it the same way.
 */
export const DETAILS_KEY_SQL = (alias: string) => `count(*) || ' ' || max(${alias}.details_version)`;

/** One per candidates service (so per app: two apps in one process, as in tests, never share one). */
export class ProviderDetailsCache {
  private readonly entries = new Map<number, { key: string; details: ProviderDetails }>();

  /** namedStatements: false behind a transaction pooler (see FlatStatementState). */
  constructor(private readonly options: { namedStatements: boolean } = { namedStatements: true }) {}

  /**
   * The details of each provider id at the given key. Undefined when some
   * provider changed (or went away) between the caller's statement and the
   * read of what the copy lacked: the caller must read again in one snapshot.
   */
  async resolve(run: Runner, wanted: ReadonlyArray<{ id: number; key: string }>): Promise<ProviderDetails[] | undefined> {
    // The hits are taken now, before any await: a request running meanwhile may replace an entry
    // with a newer one, which this request's statement did not see.
    const out = wanted.map((w) => {
      const entry = this.entries.get(w.id);
      return entry?.key === w.key ? entry.details : undefined;
    });
    const missing = wanted.flatMap((_, i) => (out[i] === undefined ? [i] : []));
    if (missing.length > 0) {
      if (this.entries.size + missing.length > MAX_ENTRIES) this.entries.clear();
      const found = await readDetails(run, missing.map((i) => wanted[i].id), this.options.namedStatements);
      for (const i of missing) {
        const row = found.get(wanted[i].id);
        if (!row || row.key !== wanted[i].key) return undefined;
        this.entries.set(wanted[i].id, row);
        out[i] = row.details;
      }
    }
    return out as ProviderDetails[];
  }
}

/** Uuid, capacities and traits of the given providers, with their keys; one round trip. */
async function readDetails(run: Runner, ids: number[], named: boolean): Promise<Map<number, { key: string; details: ProviderDetails }>> {
  const result = await run.query<[number, string, string, string | null, string | null]>({
    name: named ? "ac_provider_details" : undefined,
    text: `SELECT rp.id, inv.key, rp.uuid::text, inv.capacities,
                  (SELECT string_agg(t.name, ' ' ORDER BY t.id)
                   FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id WHERE rpt.resource_provider_id = rp.id)
           FROM resource_providers rp
           CROSS JOIN LATERAL (
             SELECT ${DETAILS_KEY_SQL("i")} AS key,
                    string_agg(i.resource_class_id || ' ' || ${capacitySql("i")}, ' ' ORDER BY i.resource_class_id) AS capacities
             FROM inventories i WHERE i.resource_provider_id = rp.id) inv
           WHERE rp.id = ANY($1::int[])`,
    values: [ids],
    rowMode: "array",
  });
  const out = new Map<number, { key: string; details: ProviderDetails }>();
  for (const [id, key, uuid, inventories, traits] of result.rows) {
    const numbers = inventories ? inventories.split(" ").map(Number) : [];
    const pairs: Array<readonly [number, number]> = [];
    for (let i = 0; i < numbers.length; i += 2) pairs.push([numbers[i], numbers[i + 1]]);
    out.set(id, { key, details: { uuid, inventories: pairs, traits: traits ?? "" } });
  }
  return out;
}
