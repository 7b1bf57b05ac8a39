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
import type { IdsByName } from "./sql/names.js";
import type { TreeInventory } from "./sql/tree-loads.js";

/** Per group: the options of each anchor tree, or (unsuffixed group over trees) the per-class choices to spread over. */
export type GroupPlan =
  | { kind: "options"; group: RequestGroup; byAnchor: Map<number, GroupOption[]> }
  | { kind: "spread"; group: RequestGroup; byAnchor: Map<number, Map<number, ResourceRequest[]>>; required: number[][]; forbidden: Set<number> };

export const EMPTY: unique symbol = Symbol("no candidates");

export interface Planned {
  plans: GroupPlan[];
  trees: boolean;
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

/**
 * Providers with their roots, as two lists of one length in provider id
 * order: a batch finds thousands, and a [provider, root] array for each was
 * most of the planner's garbage.
 */
interface Found {
  ids: number[];
  roots: number[];
}

const byProvider = (inv: TreeInventory) => inv.providerId;
const byRequestProvider = (rr: ResourceRequest) => rr.providerId;

/** Per request, the providers (in id order) whose inventory can take the amount. */
function withCapacity(requests: CapacityRequest[], scope: Scope): Found[] {
  const byClass = new Map<number, TreeInventory[]>();
  for (const inv of scope.inventories) {
    const list = byClass.get(inv.resourceClassId);
    if (list) list.push(inv);
    else byClass.set(inv.resourceClassId, [inv]);
  }
  byClass.forEach((list) => {
    sortByKey(list, byProvider);
  });
  return requests.map((r) => {
    const found: Found = { ids: [], roots: [] };
    const list = byClass.get(r.resourceClassId);
    if (list === undefined) return found;
    for (let i = 0; i < list.length; i++) {
      const inv = list[i];
      const root = scope.rootOf.get(inv.providerId)!;
      if (canTake(inv, r.amount) && inTree(root, r.treeRootId)) {
        found.ids.push(inv.providerId);
        found.roots.push(root);
      }
    }
    return found;
  });
}

/** What every batch of a request shares: who has the named traits and aggregates, and who shares. */
export interface Members {
  traitsOf: Map<number, Set<number>>;
  aggsOf: Map<number, Set<number>>;
  sharing: number[];
  isSharing: (providerId: number) => boolean;
  /**
   * Sharing provider id to the roots it anchors into: at least those among
   * the batch's anchors (general-source.ts reads a batch's own), the only
   * ones planned for.
   */
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
  const { traitsOf, isSharing, anchorsOf } = members;
  const anySharing = members.sharing.length > 0;

  // root_required / root_forbidden: a trait expression on each anchor's root.
  const rootExpr = rootTraitExpression(params.rootRequired.map((t) => tIds.get(t)!), params.rootForbidden.map((t) => tIds.get(t)!));
  const anchorOk = (root: number): boolean => isEmptyExpression(rootExpr) || allows(traitsOf.get(root), rootExpr);

  const requests = groups.flatMap((g) =>
    [...g.resources].map(([rc, amount]) => ({ group: g, resourceClassId: rcIds.get(rc)!, amount, treeRootId: treeRoot.get(g.suffix) })),
  );
  const capacity = withCapacity(requests, scope);
  const capacityOf = new Map<RequestGroup, Array<{ rc: number; amount: number; found: Found }>>();
  for (let i = 0; i < requests.length; i++) {
    if (capacity[i].ids.length === 0) return EMPTY;
    const list = capacityOf.get(requests[i].group) ?? [];
    list.push({ rc: requests[i].resourceClassId, amount: requests[i].amount, found: capacity[i] });
    capacityOf.set(requests[i].group, list);
  }

  const filters = groups.map((g) => groupFilters(g, names, members));

  // Which providers satisfy each group on their own (granular groups, or no trees and no sharing).
  const singles = new Map<RequestGroup, Found>();
  for (let k = 0; k < groups.length; k++) {
    const g = groups[k];
    if (!g.useSameProvider && (anySharing || trees)) continue;
    let found: Found;
    if (g.resources.size === 0) {
      // Without positive filters resourcelessProviders gives none: no candidates, as Placement.
      const pairs = members.resourceless.get(g) ?? [];
      found = { ids: pairs.map((pair) => pair[0]), roots: pairs.map((pair) => pair[1]) };
    } else {
      found = providersInAll(capacityOf.get(g)!, filters[k].passes);
    }
    if (found.ids.length === 0) return EMPTY;
    singles.set(g, found);
  }

  const plans: GroupPlan[] = [];
  for (let k = 0; k < groups.length; k++) {
    const g = groups[k];
    const f = filters[k];
    const single = singles.get(g);
    if (single) {
      const byAnchor = new Map<number, GroupOption[]>();
      const add = (anchor: number, option: GroupOption) => {
        const list = byAnchor.get(anchor);
        if (list) list.push(option);
        else byAnchor.set(anchor, [option]);
      };
      const classAmounts = [...g.resources].map(([rc, amount]) => ({ resourceClassId: rcIds.get(rc)!, amount }));
      for (let i = 0; i < single.ids.length; i++) {
        const rp = single.ids[i];
        const root = single.roots[i];
        const resources = new Array<ResourceRequest>(classAmounts.length);
        for (let c = 0; c < classAmounts.length; c++) resources[c] = { providerId: rp, resourceClassId: classAmounts[c].resourceClassId, amount: classAmounts[c].amount };
        const option: GroupOption = { suffix: g.suffix, sameProvider: g.useSameProvider, resources, providers: [rp] };
        if (scope.anchors.has(root) && anchorOk(root)) add(root, option);
        if (isSharing(rp)) {
          const anchors = anchorsOf.get(rp);
          if (anchors) for (const anchor of anchors) if (anchor !== root && scope.anchors.has(anchor) && anchorOk(anchor)) add(anchor, option);
        }
      }
      plans.push({ kind: "options", group: g, byAnchor });
      continue;
    }
    // The unsuffixed group over trees and sharing providers: per class, which providers (under which anchor) can serve it.
    let byAnchor: Map<number, Map<number, ResourceRequest[]>> | undefined;
    for (const l of capacityOf.get(g)!) {
      const forClass = new Map<number, ResourceRequest[]>();
      const keep = (rp: number, anchor: number) => {
        if (!scope.anchors.has(anchor) || !anchorOk(anchor)) return;
        if (f.memberOf.length > 0 && !f.inAggs(rp) && !f.inAggs(anchor)) return;
        if (f.badAggs(rp) || f.badAggs(anchor)) return;
        const rr: ResourceRequest = { providerId: rp, resourceClassId: l.rc, amount: l.amount };
        const list = forClass.get(anchor);
        if (list) list.push(rr);
        else forClass.set(anchor, [rr]);
      };
      const { ids, roots } = l.found;
      for (let i = 0; i < ids.length; i++) keep(ids[i], roots[i]);
      if (!g.inTree) {
        for (let i = 0; i < ids.length; i++) {
          const rp = ids[i];
          if (!isSharing(rp) || (f.memberOf.length > 0 && !f.inAggs(rp))) continue;
          const anchors = anchorsOf.get(rp);
          if (anchors) for (const anchor of anchors) if (anchor !== roots[i] && scope.anchors.has(anchor)) keep(rp, anchor);
        }
      }
      if (!byAnchor) {
        const first = new Map<number, Map<number, ResourceRequest[]>>();
        forClass.forEach((rrs, anchor) => {
          first.set(anchor, new Map<number, ResourceRequest[]>().set(l.rc, rrs));
        });
        byAnchor = first;
      } else {
        byAnchor.forEach((perClass, anchor, all) => {
          const rrs = forClass.get(anchor);
          if (rrs) perClass.set(l.rc, rrs);
          else all.delete(anchor);
        });
      }
      if (byAnchor.size === 0) return EMPTY;
    }
    plans.push({ kind: "spread", group: g, byAnchor: byAnchor!, required: f.required, forbidden: f.forbidden });
  }
  // Sort each list by provider id so output order is stable (Placement's is set order, i.e. arbitrary).
  for (const p of plans) {
    if (p.kind !== "spread") continue;
    p.byAnchor.forEach((perClass) => {
      perClass.forEach((rrs) => {
        sortByKey(rrs, byRequestProvider);
      });
    });
  }
  return { plans, trees, traitsOf, isSharing };
}

/** The providers (in id order) found for every one of a group's classes that pass its filters: one provider with everything. */
function providersInAll(lists: Array<{ found: Found }>, passes: (rp: number) => boolean): Found {
  const { ids, roots } = lists[0].found;
  const others = lists.length === 1 ? [] : lists.slice(1).map((l) => new Set(l.found.ids));
  const out: Found = { ids: [], roots: [] };
  for (let i = 0; i < ids.length; i++) {
    const rp = ids[i];
    let inAll = true;
    for (const other of others) if (!other.has(rp)) inAll = false;
    if (inAll && passes(rp)) {
      out.ids.push(rp);
      out.roots.push(roots[i]);
    }
  }
  return out;
}
