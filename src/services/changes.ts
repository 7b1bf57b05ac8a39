/**
 * Reading the change feed (GET /changes, an extension). The rows are written
 * by triggers in the writing transactions and ordered at their commit (see
 * the change_feed migration): `seq` is commit order, and a reader that sees
 * a seq sees every lower one, so "everything after cursor C" never misses a
 * row that commits later.
 */
import { sql } from "drizzle-orm";
import type { Queryable } from "../db/database.js";
import { CursorTooOld } from "./errors.js";

/** A provider's state after a change, as the sequencing trigger recorded it. */
export interface ProviderState {
  generation: number;
  name: string;
  parent_provider_uuid: string | null;
  root_provider_uuid: string;
  inventories: Record<string, { total: number; reserved: number; min_unit: number; max_unit: number; step_size: number; allocation_ratio: number }>;
  usages: Record<string, number>;
  traits: string[];
  aggregates: string[];
}

export interface ProviderChange {
  cursor: number;
  providerUuid: string;
  /** Undefined when the provider was deleted. */
  state?: ProviderState;
}

/**
 * The cursor of everything committed so far: the highest seq visible now.
 * (Not the sequence's last value: that may belong to a transaction still
 * committing, whose rows this reader cannot see yet.)
 */
export async function currentCursor(q: Queryable): Promise<number> {
  const res = await q.execute<{ cursor: number }>(sql`
    SELECT GREATEST((SELECT max(seq) FROM provider_changes), (SELECT pruned_through FROM provider_changes_horizon WHERE id = 1), 0)::bigint AS cursor`);
  return Number(res.rows[0].cursor);
}

/**
 * The changes of up to `maxCommits` transactions after `since`, in commit
 * order (within one transaction, by provider id). One statement, so the
 * horizon and the rows come from one snapshot. Throws the 410 when `since`
 * is below the horizon (CursorTooOld).
 */
export async function changesSince(q: Queryable, since: number, maxCommits: number): Promise<ProviderChange[]> {
  const res = await q.execute<{ horizon: number; seq: number | null; uuid: string | null; state: ProviderState | null }>(sql`
    SELECT h.pruned_through AS horizon, c.seq, c.resource_provider_uuid AS uuid, c.state
    FROM provider_changes_horizon h
    LEFT JOIN LATERAL (
      SELECT seq, resource_provider_id, resource_provider_uuid, state FROM provider_changes
      WHERE seq IN (SELECT DISTINCT seq FROM provider_changes WHERE seq > ${since} ORDER BY seq LIMIT ${maxCommits})
    ) c ON true
    WHERE h.id = 1
    ORDER BY c.seq, c.resource_provider_id`);
  const horizon = Number(res.rows[0]?.horizon ?? 0);
  if (since < horizon) throw new CursorTooOld(since, horizon);
  return res.rows
    .filter((r) => r.seq !== null)
    .map((r) => ({ cursor: Number(r.seq), providerUuid: r.uuid ?? "", state: r.state ?? undefined }));
}
