/** Helpers shared by the POST /claims tests: bodies, and invariants read from the tables. */
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { emptyConsumers, overcommitted, ownerDrift, PROJECT, USER, usageDrift } from "../allocations/fixtures.js";

export const consumer = (uuid = newUuid()) => ({ consumer_uuid: uuid, project_id: PROJECT, user_id: USER, consumer_type: "INSTANCE" });

export function claimBody(extra: object = {}, consumers = [consumer()]) {
  return { consumers, ...extra };
}

/** Everything that must hold whatever the claims did: nothing over capacity, no empty consumer, stored usage and owner copies right. */
export async function brokenInvariants(t: { sql: Harness["sql"] }): Promise<unknown[]> {
  return [...(await overcommitted(t)), ...(await emptyConsumers(t)), ...(await usageDrift(t)), ...(await ownerDrift(t))];
}

/** Provider uuid to class to units, as the allocations table has them for one consumer. */
export async function allocationsOf(t: { sql: Harness["sql"] }, consumerUuid: string): Promise<Record<string, Record<string, number>>> {
  const rows = await t.sql<{ rp: string; rc: string; used: number }>(
    `SELECT rp.uuid AS rp, rc.name AS rc, a.used FROM allocations a JOIN consumers c ON c.id = a.consumer_id
     JOIN resource_providers rp ON rp.id = a.resource_provider_id JOIN resource_classes rc ON rc.id = a.resource_class_id
     WHERE c.uuid = $1`,
    [consumerUuid],
  );
  const out: Record<string, Record<string, number>> = {};
  for (const r of rows) (out[r.rp] ??= {})[r.rc] = r.used;
  return out;
}

/** A harness for the file and a connection of the test's own beside it (to hold locks or commit under a claim), both set before the tests and closed after. */
export function harnessWithOwnConnection(): { t: Harness; own: pg.Client } {
  const ctx = {} as { t: Harness; own: pg.Client };
  beforeAll(async () => {
    ctx.t = await startHarness();
    ctx.own = new pg.Client({ connectionString: ctx.t.url });
    await ctx.own.connect();
  });
  afterAll(async () => {
    await ctx.own?.end();
    await ctx.t?.close();
  });
  return ctx;
}

/** Deletes every provider and allocation (the tables a claims test fills), children first. */
export async function emptyCloud(t: { sql: Harness["sql"] }): Promise<void> {
  for (const table of ["allocations", "consumers", "inventories", "resource_provider_traits", "resource_provider_aggregates", "resource_providers"]) {
    await t.sql(`DELETE FROM ${table}`);
  }
}
