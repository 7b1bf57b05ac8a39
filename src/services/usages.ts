/** Usage sums: per provider (GET /resource_providers/{uuid}/usages) and per project/user (GET /usages). */
import { sql, type SQL } from "drizzle-orm";
import type { Queryable } from "../db/database.js";
import { getProviderByUuid, type ProviderRow } from "./providers.js";

/**
 * Usage per resource class the provider has inventory of, 0 for classes
 * nothing is allocated from (as Placement: classes without inventory are
 * not listed): `inventories.used`, which triggers keep equal to the sum of
 * the allocations.
 */
export async function getProviderUsages(q: Queryable, uuid: string): Promise<{ provider: ProviderRow; usages: Record<string, number> }> {
  const provider = await getProviderByUuid(q, uuid, "list usages");
  return { provider, usages: await usagesOf(q, provider.id) };
}

async function usagesOf(q: Queryable, providerId: number): Promise<Record<string, number>> {
  const res = await q.execute<{ name: string; used: number }>(sql`
    SELECT rc.name, i.used
    FROM inventories i
    JOIN resource_classes rc ON rc.id = i.resource_class_id
    WHERE i.resource_provider_id = ${providerId}
    ORDER BY rc.id`);
  return Object.fromEntries(res.rows.map((r) => [r.name, r.used]));
}

export interface UsageFilter {
  projectId: string;
  userId?: string;
}

/**
 * The allocations of the project's (and user's) consumers: a range of
 * allocations_owner_usage_idx, whose columns are the consumer's owner as
 * triggers copy it onto each allocation (drizzle/0013), and every column
 * these sums read, so PostgreSQL answers from the index alone.
 */
function ownedAllocations(f: UsageFilter, join: SQL = sql``): SQL {
  const byUser = f.userId === undefined ? sql`` : sql` AND a.user_id = (SELECT id FROM users WHERE external_id = ${f.userId})`;
  return sql`FROM allocations a${join} WHERE a.project_id = (SELECT id FROM projects WHERE external_id = ${f.projectId})${byUser}`;
}

/** Total usage per class of the project's (and user's) consumers: the 1.9 - 1.37 shape. */
export async function getTotalUsages(q: Queryable, f: UsageFilter): Promise<Record<string, number>> {
  const res = await q.execute<{ name: string; used: number }>(sql`
    SELECT rc.name, s.used
    FROM (SELECT a.resource_class_id, SUM(a.used)::bigint AS used ${ownedAllocations(f)} GROUP BY a.resource_class_id) s
    JOIN resource_classes rc ON rc.id = s.resource_class_id
    ORDER BY rc.id`);
  return Object.fromEntries(res.rows.map((r) => [r.name, r.used]));
}

/** Usage of one group of consumers: amounts per class plus how many distinct consumers hold them. */
export type GroupUsage = Record<string, number> & { consumer_count: number };

/**
 * The 1.38 shape: usages grouped by consumer type ("unknown" for consumers
 * without one). `consumerType` narrows to one type; the literal "all" puts
 * everything in one group named "all", "unknown" only the untyped consumers.
 * consumer_count counts distinct consumers, not (consumer, class) pairs.
 */
export async function getUsagesByConsumerType(
  q: Queryable,
  f: UsageFilter,
  consumerType?: string,
): Promise<Record<string, GroupUsage>> {
  let group: SQL;
  let typeFilter = sql``;
  if (consumerType === "all") {
    group = sql`'all'`;
  } else if (consumerType === "unknown") {
    group = sql`'unknown'`;
    typeFilter = sql` AND a.consumer_type_id IS NULL`;
  } else {
    group = sql`COALESCE(ct.name, 'unknown')`;
    if (consumerType !== undefined) typeFilter = sql` AND ct.name = ${consumerType}`;
  }
  const res = await q.execute<{ grp: string; name: string; used: number; consumers: number }>(sql`
    WITH scoped AS (
      SELECT ${group} AS grp, a.consumer_id, a.resource_class_id, a.used
      ${ownedAllocations(f, sql` LEFT JOIN consumer_types ct ON ct.id = a.consumer_type_id`)}${typeFilter}
    )
    SELECT s.grp, rc.name, s.used, n.consumers
    FROM (SELECT grp, resource_class_id, SUM(used)::bigint AS used FROM scoped GROUP BY grp, resource_class_id) s
    JOIN (SELECT grp, COUNT(DISTINCT consumer_id)::bigint AS consumers FROM scoped GROUP BY grp) n ON n.grp = s.grp
    JOIN resource_classes rc ON rc.id = s.resource_class_id
    ORDER BY s.grp, rc.id`);
  const out: Record<string, GroupUsage> = {};
  for (const r of res.rows) {
    // Members in Placement's order: consumer_count follows the group's first class.
    const g = (out[r.grp] ??= {} as GroupUsage);
    g[r.name] = r.used;
    g.consumer_count = r.consumers;
  }
  return out;
}
