/**
 * What must hold in the tables after any fault, read straight from them:
 * no provider over capacity, stored usage equal to the sum of allocations,
 * no consumer without allocations, and every consumer holding exactly what
 * the server acknowledged (or, for a write whose answer was lost, exactly
 * its old or its new allocations).
 */
import pg from "pg";
import { canonical, type Claim, type Ledger } from "./workload.js";

export interface InvariantReport {
  overCapacity: unknown[];
  usageDrift: unknown[];
  emptyConsumers: unknown[];
  /** Consumers whose allocations differ from the ledger: consumer -> what the tables hold. */
  ledgerMismatches: Array<{ consumer: string; held: string; expected: string[] }>;
  consumersChecked: number;
}

export function broken(report: InvariantReport): boolean {
  return report.overCapacity.length + report.usageDrift.length + report.emptyConsumers.length + report.ledgerMismatches.length > 0;
}

export async function checkInvariants(url: string, ledger: Ledger): Promise<InvariantReport> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const rows = async (text: string) => (await client.query(text)).rows;
    const overCapacity = await rows("SELECT provider_uuid, resource_class, used, capacity FROM provider_capacity WHERE used > capacity");
    const usageDrift = await rows(
      `SELECT i.resource_provider_id, i.resource_class_id, i.used, coalesce(a.s, 0) AS allocated
       FROM inventories i
       LEFT JOIN (SELECT resource_provider_id, resource_class_id, sum(used) AS s FROM allocations GROUP BY 1, 2) a
         USING (resource_provider_id, resource_class_id)
       WHERE i.used <> coalesce(a.s, 0)`,
    );
    const emptyConsumers = await rows("SELECT c.uuid FROM consumers c WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)");
    const held = new Map<string, Claim>();
    for (const r of await rows(
      `SELECT c.uuid AS consumer, rp.uuid AS provider, rc.name AS class, a.used
       FROM allocations a JOIN consumers c ON c.id = a.consumer_id
       JOIN resource_providers rp ON rp.id = a.resource_provider_id JOIN resource_classes rc ON rc.id = a.resource_class_id`,
    )) {
      const claim = held.get(r.consumer) ?? {};
      const resources = (claim[r.provider] ??= {});
      // Two rows for one provider and class would be one claim counted twice: keep the sum visible.
      resources[r.class] = (resources[r.class] ?? 0) + Number(r.used);
      held.set(r.consumer, claim);
    }
    const ledgerMismatches: InvariantReport["ledgerMismatches"] = [];
    const consumers = new Set([...held.keys(), ...ledger.acknowledged.keys(), ...ledger.uncertain.keys()]);
    for (const consumer of consumers) {
      const options = ledger.uncertain.get(consumer) ?? [ledger.acknowledged.get(consumer)];
      const actual = canonical(held.get(consumer));
      const expected = options.map(canonical);
      if (!expected.includes(actual)) ledgerMismatches.push({ consumer, held: actual, expected });
    }
    return { overCapacity, usageDrift, emptyConsumers, ledgerMismatches, consumersChecked: consumers.size };
  } finally {
    await client.end();
  }
}
