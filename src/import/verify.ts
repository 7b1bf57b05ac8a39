/**
 * After the copy, before its commit: the same questions asked of the source
 * snapshot and of our database by their own queries (not through the rows
 * the copy moved), answer by answer. Any difference rolls the import back.
 */
import type pg from "pg";
import type { SourceDatabase } from "./source.js";

export interface Check {
  name: string;
  /** Rows (or keys) each side answered. */
  source: number;
  target: number;
  /** Keys whose answers differ, or that one side lacks. */
  differences: number;
  example?: string;
}

export interface Verification {
  ok: boolean;
  checks: Check[];
}

/** One question: SQL that works on both sides, returning a key and a value column per row. */
interface Question {
  name: string;
  source: string;
  target: string;
  /** Compare only keys the source has (our standard classes and traits may be a superset). */
  sourceKeysOnly?: boolean;
}

function providersSql(): string {
  return `SELECT p.uuid AS k, CONCAT(p.name, ' ', COALESCE(p.generation, 0), ' ', COALESCE(pp.uuid, '-'), ' ', COALESCE(r.uuid, p.uuid)) AS v
          FROM resource_providers p LEFT JOIN resource_providers pp ON pp.id = p.parent_provider_id
          LEFT JOIN resource_providers r ON r.id = p.root_provider_id`;
}

const INVENTORIES_SQL = `SELECT CONCAT(rp.uuid, ' ', rc.name) AS k,
    CONCAT(i.total, ' ', i.reserved, ' ', i.min_unit, ' ', i.max_unit, ' ', i.step_size) AS v, i.allocation_ratio AS ratio
  FROM inventories i JOIN resource_providers rp ON rp.id = i.resource_provider_id JOIN resource_classes rc ON rc.id = i.resource_class_id`;

function usageSql(consumerJoin: string): string {
  return `SELECT CONCAT(rp.uuid, ' ', rc.name) AS k, SUM(allocations.used) AS v FROM allocations
          JOIN consumers ON ${consumerJoin}
          JOIN resource_providers rp ON rp.id = allocations.resource_provider_id JOIN resource_classes rc ON rc.id = allocations.resource_class_id
          GROUP BY rp.uuid, rc.name`;
}

const CONSUMERS_SQL = `SELECT consumers.uuid AS k, CONCAT(consumers.generation, ' ', p.external_id, ' ', u.external_id, ' ', COALESCE(ct.name, '-')) AS v
  FROM consumers JOIN projects p ON p.id = consumers.project_id JOIN users u ON u.id = consumers.user_id
  LEFT JOIN consumer_types ct ON ct.id = consumers.consumer_type_id`;

function allocationsSql(consumerJoin: string): string {
  return `SELECT CONCAT(consumers.uuid, ' ', rp.uuid, ' ', rc.name) AS k, SUM(allocations.used) AS v FROM allocations
          JOIN consumers ON ${consumerJoin}
          JOIN resource_providers rp ON rp.id = allocations.resource_provider_id JOIN resource_classes rc ON rc.id = allocations.resource_class_id
          GROUP BY consumers.uuid, rp.uuid, rc.name`;
}

function providerLinksSql(linkTable: string, other: string, otherId: string, otherKey: string): string {
  return `SELECT CONCAT(rp.uuid, ' ', o.${otherKey}) AS k, 1 AS v FROM ${linkTable} l
          JOIN resource_providers rp ON rp.id = l.resource_provider_id JOIN ${other} o ON o.id = l.${otherId}`;
}

/**
 * Upstream names a consumer in allocations by uuid, we by id; everything else
 * is the same SQL: the consumer join is given per side.
 */
const QUESTIONS: Question[] = [
  ...["resource_providers", "inventories", "resource_provider_traits", "resource_provider_aggregates", "projects", "users", "consumer_types", "consumers", "allocations"].map(
    (table) => ({ name: `rows in ${table}`, source: `SELECT 'count' AS k, count(*) AS v FROM ${table}`, target: `SELECT 'count' AS k, count(*) AS v FROM ${table}` }),
  ),
  { name: "rows in aggregates", source: "SELECT 'count' AS k, count(*) AS v FROM placement_aggregates", target: "SELECT 'count' AS k, count(*) AS v FROM aggregates" },
  { name: "resource classes by name", source: "SELECT name AS k, 1 AS v FROM resource_classes", target: "SELECT name AS k, 1 AS v FROM resource_classes", sourceKeysOnly: true },
  { name: "traits by name", source: "SELECT name AS k, 1 AS v FROM traits", target: "SELECT name AS k, 1 AS v FROM traits", sourceKeysOnly: true },
  {
    name: "provider name, generation, parent and root",
    source: providersSql(),
    target: providersSql(),
  },
  { name: "inventories per provider and class", source: INVENTORIES_SQL, target: INVENTORIES_SQL },
  { name: "usage per provider and class", source: usageSql("consumers.uuid = allocations.consumer_id"), target: usageSql("consumers.id = allocations.consumer_id") },
  {
    name: "stored usage (inventories.used) per provider and class",
    source: usageSql("consumers.uuid = allocations.consumer_id"),
    target: `SELECT CONCAT(rp.uuid, ' ', rc.name) AS k, i.used AS v FROM inventories i
             JOIN resource_providers rp ON rp.id = i.resource_provider_id JOIN resource_classes rc ON rc.id = i.resource_class_id WHERE i.used > 0`,
  },
  { name: "consumer generation, project, user and type", source: CONSUMERS_SQL, target: CONSUMERS_SQL },
  {
    name: "allocations per consumer, provider and class",
    source: allocationsSql("consumers.uuid = allocations.consumer_id"),
    target: allocationsSql("consumers.id = allocations.consumer_id"),
  },
  { name: "traits per provider", source: providerLinksSql("resource_provider_traits", "traits", "trait_id", "name"), target: providerLinksSql("resource_provider_traits", "traits", "trait_id", "name") },
  {
    name: "aggregates per provider",
    source: providerLinksSql("resource_provider_aggregates", "placement_aggregates", "aggregate_id", "uuid"),
    target: providerLinksSql("resource_provider_aggregates", "aggregates", "aggregate_id", "uuid"),
  },
];

type Answer = Map<string, string>;

function answers(rows: Record<string, unknown>[]): Answer {
  // allocation_ratio is compared as a number: MySQL's FLOAT and PostgreSQL's double print differently.
  return new Map(rows.map((r) => [String(r.k), r.ratio === undefined ? String(r.v) : `${String(r.v)} ${Number(r.ratio)}`]));
}

export async function verifyImport(source: SourceDatabase, target: pg.ClientBase): Promise<Verification> {
  const checks: Check[] = [];
  for (const q of QUESTIONS) {
    const want = answers(await source.rows(q.source));
    const got = answers((await target.query(q.target)).rows);
    let differences = 0;
    let example: string | undefined;
    const keys = new Set([...want.keys(), ...(q.sourceKeysOnly ? [] : got.keys())]);
    for (const key of keys) {
      if (want.get(key) === got.get(key)) continue;
      differences++;
      example ??= `${key}: source ${want.get(key) ?? "(none)"}, copy ${got.get(key) ?? "(none)"}`;
    }
    const counted = want.has("count");
    checks.push({
      name: q.name,
      source: counted ? Number(want.get("count")) : want.size,
      target: counted ? Number(got.get("count")) : q.sourceKeysOnly ? want.size - differences : got.size,
      differences,
      example,
    });
  }
  return { ok: checks.every((c) => c.differences === 0), checks };
}

export function formatVerification(v: Verification): string {
  const width = Math.max(...v.checks.map((c) => c.name.length));
  const lines = v.checks.map((c) => {
    const verdict = c.differences === 0 ? "ok" : `${c.differences} DIFFERENT (${c.example})`;
    return `  ${c.name.padEnd(width)}  source ${String(c.source).padStart(7)}  copy ${String(c.target).padStart(7)}  ${verdict}`;
  });
  return `${[`verification: ${v.ok ? "the copy matches the source" : "THE COPY DIFFERS FROM THE SOURCE"}`, ...lines].join("\n")}\n`;
}
