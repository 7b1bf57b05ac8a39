/**
 * The engine's source for clouds without trees and without sharing
 * providers (every provider is a tree of one, which is most clouds), for the
 * requests the flat answer (flat-answer.ts) does not take (resourceless
 * groups) and for callers reading inside a transaction of their own
 * (claims): every request
 * group must then be satisfied by the anchor itself, so the whole filter
 * (capacity for every group's classes, every group's traits and aggregates,
 * root_required, in_tree) is one SQL query over resource_providers in id
 * order, and `limit` becomes a LIMIT: PostgreSQL walks the primary key and
 * stops after enough matches instead of the engine reading every inventory.
 */
import { and, sql, type SQL } from "drizzle-orm";
import type { Queryable } from "../../db/database.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import type { GroupOption } from "./combine.js";
import { generate, inTreeRoots, classNamesOf, type CandidatesResult, type EngineOptions } from "./generate.js";
import { inTreeSql, rootTraitExpression } from "../rules/trees.js";
import { aggregateConditions, capacityForAll, traitConditions } from "./conditions.js";
import type { IdsByName } from "./sql/names.js";
import { loadTrees, type TreeData } from "./sql/tree-loads.js";

const RP_ID = "rp.id";

export interface FlatPlan {
  /** Matching providers after `afterId`, in id order, at most `count` (all when undefined), with their trees loaded. */
  next(
    afterId: number,
    count: number | undefined,
  ): Promise<{ anchors: number[]; data?: TreeData; after: number; done: boolean; scanned: number; optionsAt: OptionsAt }>;
}

type OptionsAt = (anchor: number) => GroupOption[][];

/** The candidates of `query` on a flat cloud, read through `tx`; undefined when it cannot match at all. */
export async function flatSourceCandidates(tx: Queryable, query: CandidatesQuery, names: IdsByName, opts: EngineOptions): Promise<CandidatesResult | undefined> {
  const treeRoots = inTreeRoots(query, names);
  const plan = treeRoots && planFlat(tx, query, names, treeRoots);
  if (!plan) return undefined;
  const source = { ...plan, load: (roots: number[]) => loadTrees(tx, roots), trees: false, rootOf: () => undefined, isSharing: () => false, onePerAnchor: true };
  return generate(query, opts, source, classNamesOf(names));
}

/** The flat plan, or undefined when the request cannot match at all (Placement's early "no candidates"). */
export function planFlat(tx: Queryable, query: CandidatesQuery, names: IdsByName, treeRoots: Map<string, number>): FlatPlan | undefined {
  const { groups, params } = query;
  const rc = (name: string) => names.resourceClasses.get(name)!;
  const trait = (name: string) => names.traits.get(name)!;
  const aggs = (uuids: Iterable<string>) => [...uuids].map((u) => names.aggregates.get(u)).filter((a): a is number => a !== undefined);

  // Two granular groups can never be isolated on a tree of one provider.
  if (params.groupPolicy === "isolate" && groups.filter((g) => g.useSameProvider).length > 1) return undefined;

  const conditions: SQL[] = [];
  const requests: Array<{ resourceClassId: number; amount: number }> = [];
  for (const g of groups) {
    if (g.resources.size === 0 && g.traits.required.length === 0 && g.aggregates.memberOf.length === 0) return undefined;
    for (const [name, amount] of g.resources) requests.push({ resourceClassId: rc(name), amount });
    conditions.push(...traitConditions(RP_ID, { anyOf: g.traits.required.map((l) => l.map(trait)), forbidden: [...g.traits.forbidden].map(trait) }));
    conditions.push(...aggregateConditions(RP_ID, { anyOf: g.aggregates.memberOf.map(aggs), forbidden: aggs(g.aggregates.forbidden) }));
    const root = treeRoots.get(g.suffix);
    // As Placement, in_tree narrows only groups that ask for resources.
    if (root !== undefined && g.resources.size > 0) conditions.push(sql.raw(inTreeSql(RP_ID, String(root))));
  }
  // A flat provider is its own root.
  conditions.push(...traitConditions(RP_ID, rootTraitExpression(params.rootRequired.map(trait), params.rootForbidden.map(trait))));
  if (requests.length > 0) conditions.push(capacityForAll(RP_ID, requests));
  // Each group's single option at an anchor: the anchor itself. Amounts of one class asked by several
  // groups add up on the one provider; the merge checks the sum.
  const optionsAt: OptionsAt = (anchor) =>
    groups.map((g) => [
      {
        suffix: g.suffix,
        sameProvider: g.useSameProvider,
        resources: [...g.resources].map(([name, amount]) => ({ providerId: anchor, resourceClassId: rc(name), amount })),
        providers: [anchor],
      },
    ]);
  return {
    next: async (afterId, count) => {
      const limit = count === undefined ? sql`` : sql`LIMIT ${count}`;
      // Two statements, not one: folded into a single CTE the planner misjudges the anchors as one row
      // and both plans and runs the tree load slower than the two round trips cost.
      const result = await tx.execute(
        sql`SELECT rp.id FROM resource_providers rp WHERE ${and(sql`rp.id > ${afterId}`, ...conditions)} ORDER BY rp.id ${limit}`,
      );
      const anchors = (result.rows as Array<{ id: number }>).map((r) => r.id);
      return {
        anchors,
        data: anchors.length > 0 ? await loadTrees(tx, anchors) : undefined,
        after: anchors.length > 0 ? anchors[anchors.length - 1] : afterId,
        done: count === undefined || anchors.length < count,
        scanned: anchors.length,
        optionsAt,
      };
    },
  };
}
