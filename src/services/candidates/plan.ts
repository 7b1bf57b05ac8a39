/**
 * The general plan's planning, as pure functions over what was fetched
 * before (general-source.ts fetches through tree-reads.ts, this plans): per batch of anchor trees,
 * which providers can take each requested amount (rules/capacity.ts), which
 * meet each group's trait and aggregate filters (rules/memberships.ts) and
 * tree filters (rules/trees.ts), and from those per group the ways each
 * anchor tree can satisfy it: granular groups need one provider with
 * everything; the unsuffixed group may spread over a tree and the sharing
 * providers of its aggregates. No database: test/candidates/plan.test.ts
 * tests it on plain data, like combine.ts.
 */
import type { CandidatesQuery, RequestGroup } from "../../query/request-groups.js";
import { canTake } from "../rules/capacity.js";
import { allows, isEmptyExpression } from "../rules/memberships.js";
import { inTree, rootTraitExpression } from "../rules/trees.js";
import { sortByKey, type GroupOption, type ResourceRequest } from "./combine.js";
import type { IdsByName, TreeInventory } from "./sql.js";

/** Per group: the options of each anchor tree, or (unsuffixed group over trees) the per-class choices to spread over. */
export type GroupPlan =
  | { kind: "options"; group: RequestGroup; byAnchor: Map<number, GroupOption[]> }
  | { kind: "spread"; group: RequestGroup; byAnchor: Map<number, Map<number, ResourceRequest[]>>; required: number[][]; forbidden: Set<number> };

export const EMPTY: unique symbol = Symbol("no candidates");


export interface Planned {
  plans: GroupPlan[];
  trees: boolean;
  rootOf: Map<number, number>;
  /** Provider id to the requested traits it has. */
  traitsOf: Map<number, Set<number>>;
  isSharing: (providerId: number) => boolean;
}

/** The inventories a batch may draw on (its trees' and every sharing provider's), and each provider's root. */
export interface Scope {
  inventories: TreeInventory[];
  rootOf: Pick<Map<number, number>, "get">;
  /**
   * The batch's roots, the only anchors planned for: a sharing provider
   * anchors into trees of every batch, and options for the others' anchors
   * would be built and thrown away (with 20 sharing providers over 1,000
   * trees in batches of 250, three quarters of its options).
   */
  anchors: Set<number>;
}

interface CapacityRequest {
  resourceClassId: number;
  amount: number;
  /** Only providers of the tree with this root (in_tree). */
  treeRootId?: number;
}

/** Per request, the [provider, root] pairs (in provider id order) whose inventory can take the amount. */
function withCapacity(requests: CapacityRequest[], scope: Scope): Array<Array<[number, number]>> {
  const byClass = new Map<number, TreeInventory[]>();
  for (const inv of scope.inventories) {
    const list = byClass.get(inv.resourceClassId);
    if (list) list.push(inv);
    else byClass.set(inv.resourceClassId, [inv]);
  }
  return requests.map((r) => {
    const out: Array<[number, number]> = [];
    for (const inv of byClass.get(r.resourceClassId) ?? []) {
      const root = scope.rootOf.get(inv.providerId)!;
      if (canTake(inv, r.amount) && inTree(root, r.treeRootId)) out.push([inv.providerId, root]);
    }
    return sortByKey(out, (pair) => pair[0]);
  });
}

/** What every batch of a request shares: who has the named traits and aggregates, and who shares. */
export interface Members {
  traitsOf: Map<number, Set<number>>;
  aggsOf: Map<number, Set<number>>;
  sharing: number[];
  isSharing: (providerId: number) => boolean;
  /** Sharing provider id to the roots it anchors into (every sharing provider). */
  anchorsOf: Map<number, number[]>;
  /** Per resourceless group, the [provider, root] pairs (in provider id order) meeting its filters. */
  resourceless: Map<RequestGroup, Array<[number, number]>>;
}

/** A group's trait and aggregate filters as predicates over the membership maps. */
export function groupFilters(g: RequestGroup, names: IdsByName, members: Pick<Members, "traitsOf" | "aggsOf">) {
  const { traits: tIds, aggregates: aggIds } = names;
  const { traitsOf, aggsOf } = members;
  const memberOf = g.aggregates.memberOf.map((l) => l.map((u) => aggIds.get(u)).filter((a): a is number => a !== undefined));
  const forbiddenAggs = [...g.aggregates.forbidden].map((u) => aggIds.get(u)).filter((a): a is number => a !== undefined);
  const required = g.traits.required.map((l) => l.map((t) => tIds.get(t)!));
  const forbidden = new Set([...g.traits.forbidden].map((t) => tIds.get(t)!));
  const traitExpr = { anyOf: required, forbidden: [...forbidden] };
  const memberOfExpr = { anyOf: memberOf, forbidden: [] };
  const forbiddenAggsExpr = { anyOf: [], forbidden: forbiddenAggs };
  const inAggs = (rp: number) => allows(aggsOf.get(rp), memberOfExpr);
  const badAggs = (rp: number) => !allows(aggsOf.get(rp), forbiddenAggsExpr);
  const unfiltered = memberOf.length === 0 && forbiddenAggs.length === 0 && required.length === 0 && forbidden.size === 0;
  return {
    memberOf,
    required,
    forbidden,
    inAggs,
    badAggs,
    /** The provider alone meets the group's trait and aggregate filters (most groups have none). */
    passes: (rp: number) => unfiltered || (allows(traitsOf.get(rp), traitExpr) && inAggs(rp) && !badAggs(rp)),
  };
}

/**
 * Per resourceless group, the providers meeting its filters, in id order; as
 * Placement, such a group is found through its positive filters only (the
 * engine answers none when a group has neither).
 */
export function resourcelessProviders(query: CandidatesQuery, names: IdsByName, members: Pick<Members, "traitsOf" | "aggsOf">): Map<RequestGroup, number[]> {
  const out = new Map<RequestGroup, number[]>();
  for (const g of query.groups) {
    if (g.resources.size > 0) continue;
    const f = groupFilters(g, names, members);
    if (f.required.length === 0 && f.memberOf.length === 0) continue;
    const universe = f.required.length > 0 ? [...members.traitsOf.keys()] : [...members.aggsOf.keys()];
    out.set(g, universe.filter(f.passes).sort((a, b) => a - b));
  }
  return out;
}

/**
 * Per group, the options of each anchor tree of a batch, drawing on the
 * batch's trees and the sharing providers that may anchor into them (scope).
 * Pure: everything it reads was fetched before (Members, Scope).
 */
export function planBatch(query: CandidatesQuery, names: IdsByName, treeRoot: Map<string, number>, members: Members, scope: Scope): Planned | typeof EMPTY {
  const { groups, params } = query;
  const { resourceClasses: rcIds, traits: tIds, hasTrees: trees } = names;
  const { traitsOf, isSharing } = members;
  const anySharing = members.sharing.length > 0;

  // root_required / root_forbidden: a trait expression on each anchor's root.
  const rootExpr = rootTraitExpression(params.rootRequired.map((t) => tIds.get(t)!), params.rootForbidden.map((t) => tIds.get(t)!));
  const anchorOk = (root: number): boolean => isEmptyExpression(rootExpr) || allows(traitsOf.get(root), rootExpr);

  const requests = groups.flatMap((g) =>
    [...g.resources].map(([rc, amount]) => ({ group: g, resourceClassId: rcIds.get(rc)!, amount, treeRootId: treeRoot.get(g.suffix) })),
  );
  const capacity = withCapacity(requests, scope);
  const rootOf = new Map<number, number>();
  const capacityOf = new Map<RequestGroup, Array<{ rc: number; amount: number; rps: Array<[number, number]> }>>();
  for (let i = 0; i < requests.length; i++) {
    if (capacity[i].length === 0) return EMPTY;
    for (const [rp, root] of capacity[i]) rootOf.set(rp, root);
    const list = capacityOf.get(requests[i].group) ?? [];
    list.push({ rc: requests[i].resourceClassId, amount: requests[i].amount, rps: capacity[i] });
    capacityOf.set(requests[i].group, list);
  }

  const filtersOf = (g: RequestGroup) => groupFilters(g, names, members);

  // Which providers satisfy each group on their own (granular groups, or no trees and no sharing).
  const singles = new Map<RequestGroup, Array<[number, number]>>();
  const spreads = new Map<RequestGroup, Array<{ rc: number; amount: number; rps: Array<[number, number]> }>>();
  for (const g of groups) {
    const f = filtersOf(g);
    if (!g.useSameProvider && (anySharing || trees)) {
      spreads.set(g, capacityOf.get(g)!);
      continue;
    }
    let rps: Array<[number, number]>;
    if (g.resources.size === 0) {
      // Without positive filters resourcelessProviders gives none: no candidates, as Placement.
      rps = members.resourceless.get(g) ?? [];
      for (const [rp, root] of rps) rootOf.set(rp, root);
    } else {
      const lists = capacityOf.get(g)!;
      const inAll = new Map(lists[0].rps);
      for (const l of lists.slice(1)) {
        const ids = new Set(l.rps.map(([rp]) => rp));
        for (const rp of inAll.keys()) if (!ids.has(rp)) inAll.delete(rp);
      }
      rps = [...inAll].filter(([rp]) => f.passes(rp));
    }
    if (rps.length === 0) return EMPTY;
    singles.set(g, rps);
  }

  const anchorsOf = members.anchorsOf;

  const plans: GroupPlan[] = [];
  for (const g of groups) {
    const f = filtersOf(g);
    const single = singles.get(g);
    if (single) {
      const byAnchor = new Map<number, GroupOption[]>();
      const add = (anchor: number, option: GroupOption) => {
        const list = byAnchor.get(anchor) ?? [];
        list.push(option);
        byAnchor.set(anchor, list);
      };
      const classAmounts = [...g.resources].map(([rc, amount]) => ({ resourceClassId: rcIds.get(rc)!, amount }));
      for (const [rp, root] of single) {
        const option: GroupOption = {
          suffix: g.suffix,
          sameProvider: g.useSameProvider,
          resources: classAmounts.map((ca) => ({ providerId: rp, resourceClassId: ca.resourceClassId, amount: ca.amount })),
          providers: [rp],
        };
        if (scope.anchors.has(root) && anchorOk(root)) add(root, option);
        if (isSharing(rp)) for (const anchor of anchorsOf.get(rp) ?? []) if (anchor !== root && scope.anchors.has(anchor) && anchorOk(anchor)) add(anchor, option);
      }
      plans.push({ kind: "options", group: g, byAnchor });
      continue;
    }
    // The unsuffixed group over trees and sharing providers: per class, which providers (under which anchor) can serve it.
    let byAnchor: Map<number, Map<number, ResourceRequest[]>> | undefined;
    for (const l of spreads.get(g)!) {
      const pairs: Array<[number, number]> = [...l.rps];
      if (!g.inTree) {
        for (const [rp] of l.rps) {
          if (!isSharing(rp) || (f.memberOf.length > 0 && !f.inAggs(rp))) continue;
          for (const anchor of anchorsOf.get(rp) ?? []) if (anchor !== rootOf.get(rp) && scope.anchors.has(anchor)) pairs.push([rp, anchor]);
        }
      }
      const kept = pairs.filter(
        ([rp, anchor]) =>
          scope.anchors.has(anchor) &&
          anchorOk(anchor) &&
          (f.memberOf.length === 0 || f.inAggs(rp) || f.inAggs(anchor)) &&
          !(f.badAggs(rp) || f.badAggs(anchor)),
      );
      const forClass = new Map<number, ResourceRequest[]>();
      for (const [rp, anchor] of kept) {
        const list = forClass.get(anchor) ?? [];
        list.push({ providerId: rp, resourceClassId: l.rc, amount: l.amount });
        forClass.set(anchor, list);
      }
      if (!byAnchor) {
        byAnchor = new Map([...forClass].map(([anchor, rrs]) => [anchor, new Map([[l.rc, rrs]])]));
      } else {
        for (const [anchor, perClass] of byAnchor) {
          const rrs = forClass.get(anchor);
          if (rrs) perClass.set(l.rc, rrs);
          else byAnchor.delete(anchor);
        }
      }
      if (byAnchor.size === 0) return EMPTY;
    }
    plans.push({ kind: "spread", group: g, byAnchor: byAnchor!, required: f.required, forbidden: f.forbidden });
  }
  // Sort each list by provider id so output order is stable (Placement's is set order, i.e. arbitrary).
  for (const p of plans) {
    if (p.kind === "spread") for (const perClass of p.byAnchor.values()) for (const rrs of perClass.values()) sortByKey(rrs, (rr) => rr.providerId);
  }
  return { plans, trees, rootOf, traitsOf, isSharing };
}

