/**
 * The general plan: any cloud (trees, sharing providers), any request. Over
 * batches of root providers in id order, each batch loads its trees whole
 * (sql.ts loadTrees: providers, inventories with usage, traits), checks
 * capacity and the filters on what it loaded, and derives per group the ways
 * each anchor tree can satisfy it: granular groups need one provider with
 * everything; the unsuffixed group may spread over a tree and the sharing
 * providers of its aggregates. What every batch shares (who has the named
 * traits and aggregates, who shares, where sharing providers anchor) is read
 * once per request (Members).
 */
import type { Queryable } from "../../db/database.js";
import type { CandidatesQuery, RequestGroup } from "../../query/request-groups.js";
import { unique } from "../../query/values.js";
import { SHARING_TRAIT } from "./cloud-shape.js";
import { sortByKey, spreadOptions, type GroupOption, type ResourceRequest } from "./combine.js";
import type { AnchorSource } from "./generate.js";
import { canTake } from "../rules/capacity.js";
import { allows, isEmptyExpression } from "../rules/memberships.js";
import { inTree, rootTraitExpression } from "../rules/trees.js";
import {
  loadTrees,
  memberships,
  nextRoots,
  rootsOf,
  sharingAnchors,
  type IdsByName,
  type TreeData,
  type TreeInventory,
} from "./sql.js";

/** Per group: the options of each anchor tree, or (unsuffixed group over trees) the per-class choices to spread over. */
type GroupPlan =
  | { kind: "options"; group: RequestGroup; byAnchor: Map<number, GroupOption[]> }
  | { kind: "spread"; group: RequestGroup; byAnchor: Map<number, Map<number, ResourceRequest[]>>; required: number[][]; forbidden: Set<number> };

const EMPTY: unique symbol = Symbol("no candidates");


interface Planned {
  plans: GroupPlan[];
  trees: boolean;
  rootOf: Map<number, number>;
  /** Provider id to the requested traits it has. */
  traitsOf: Map<number, Set<number>>;
  isSharing: (providerId: number) => boolean;
}

/** The inventories a batch may draw on (its trees' and every sharing provider's), and each provider's root. */
interface Scope {
  inventories: TreeInventory[];
  rootOf: Map<number, number>;
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
  /** Sharing provider id to the roots it anchors into, filled as batches need them. */
  anchorsOf: Map<number, number[]>;
}

export async function loadMembers(tx: Queryable, names: IdsByName): Promise<Members> {
  const { traits: traitsOf, aggregates: aggsOf } = await memberships(tx, [...names.traits.values()], [...names.aggregates.values()]);
  const sharingTrait = names.traits.get(SHARING_TRAIT);
  const sharing = sharingTrait === undefined ? [] : [...traitsOf].filter(([, ts]) => ts.has(sharingTrait)).map(([rp]) => rp);
  const sharingSet = new Set(sharing);
  return { traitsOf, aggsOf, sharing, isSharing: (rp) => sharingSet.has(rp), anchorsOf: new Map() };
}

/** Fills members.anchorsOf for the sharing providers it does not know yet, in one query. */
async function learnAnchors(tx: Queryable, members: Members, sharingIds: number[]): Promise<void> {
  const unknown = sharingIds.filter((rp) => !members.anchorsOf.has(rp));
  if (unknown.length === 0) return;
  const found = await sharingAnchors(tx, unknown);
  for (const rp of unknown) members.anchorsOf.set(rp, found.get(rp) ?? []);
}

/**
 * Per group, the options of each anchor tree of a batch, drawing on the
 * batch's trees and the sharing providers that may anchor into them (scope).
 */
async function plan(
  tx: Queryable,
  query: CandidatesQuery,
  names: IdsByName,
  treeRoot: Map<string, number>,
  members: Members,
  scope: Scope,
): Promise<Planned | typeof EMPTY> {
  const { groups, params } = query;
  const { resourceClasses: rcIds, traits: tIds, aggregates: aggIds, hasTrees: trees } = names;
  const { traitsOf, aggsOf, isSharing } = members;
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

  // Per group filters as predicates over the membership maps.
  const filtersOf = (g: RequestGroup) => {
    const memberOf = g.aggregates.memberOf.map((l) => l.map((u) => aggIds.get(u)).filter((a): a is number => a !== undefined));
    const forbiddenAggs = [...g.aggregates.forbidden].map((u) => aggIds.get(u)).filter((a): a is number => a !== undefined);
    const required = g.traits.required.map((l) => l.map((t) => tIds.get(t)!));
    const forbidden = new Set([...g.traits.forbidden].map((t) => tIds.get(t)!));
    const traitExpr = { anyOf: required, forbidden: [...forbidden] };
    const inAggs = (rp: number) => allows(aggsOf.get(rp), { anyOf: memberOf, forbidden: [] });
    const badAggs = (rp: number) => !allows(aggsOf.get(rp), { anyOf: [], forbidden: forbiddenAggs });
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
  };

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
      // As Placement: a resourceless group is found through its positive filters only.
      if (f.required.length === 0 && f.memberOf.length === 0) return EMPTY;
      const universe = f.required.length > 0 ? [...traitsOf.keys()] : [...aggsOf.keys()];
      const ids = universe.filter(f.passes);
      const roots = await rootsOf(tx, ids.sort((a, b) => a - b));
      for (const [rp, root] of roots) rootOf.set(rp, root);
      rps = [...roots];
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

  // Anchors of the sharing providers any group may use, in one query.
  const sharingIds = new Set<number>();
  for (const rps of singles.values()) for (const [rp] of rps) if (isSharing(rp)) sharingIds.add(rp);
  for (const [g, lists] of spreads) {
    if (g.inTree) continue;
    for (const l of lists) for (const [rp] of l.rps) if (isSharing(rp)) sharingIds.add(rp);
  }
  await learnAnchors(tx, members, [...sharingIds]);
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

/**
 * The general planner over batches of root providers in id order (all of them
 * when no count is given). Each batch loads its trees whole (plus, with the
 * first batch, the trees of the sharing providers, which any anchor may use)
 * and checks capacity on what it loaded, so a limited request over 10,000
 * nested trees reads the few hundred trees it needs, and no request reads an
 * inventory twice. When a group with resources is pinned to a tree (in_tree),
 * only that tree and the trees its sharing providers anchor into can be
 * anchors, and only those are read.
 */
export function generalSource(tx: Queryable, query: CandidatesQuery, names: IdsByName, treeRoots: Map<string, number>, members: Members): AnchorSource {
  const rootOf = new Map<number, number>();
  // The sharing providers' own trees, loaded with the first batch; their inventories join every batch's.
  let sharingTrees: TreeData | undefined;
  const sharingRoots = new Set<number>();
  let pinned: number[] | undefined;

  const pinnedRoots = async (): Promise<number[] | undefined> => {
    const roots = query.groups.flatMap((g) => (g.resources.size > 0 && treeRoots.has(g.suffix) ? [treeRoots.get(g.suffix)!] : []));
    if (roots.length === 0) return undefined;
    await learnAnchors(tx, members, members.sharing);
    const anchors = members.sharing.flatMap((rp) => members.anchorsOf.get(rp) ?? []);
    return unique([...roots, ...anchors]).sort((a, b) => a - b);
  };
  const rootsAfter = async (afterId: number, count: number | undefined): Promise<number[]> => {
    pinned ??= (await pinnedRoots()) ?? [];
    const fromPinned = pinned.length > 0 ? pinned.filter((r) => r > afterId) : undefined;
    if (fromPinned) return count === undefined ? fromPinned : fromPinned.slice(0, count);
    return nextRoots(tx, afterId, count);
  };

  return {
    next: async (afterId, count) => {
      const roots = await rootsAfter(afterId, count);
      const after = roots.length > 0 ? roots[roots.length - 1] : afterId;
      const done = count === undefined || roots.length < count;
      const scanned = roots.length;
      if (roots.length === 0) return { anchors: [], after, done, scanned, optionsAt: noOptions };
      const firstBatch = sharingTrees === undefined;
      if (firstBatch) {
        const ids = new Set(members.sharing);
        const found = members.sharing.length > 0 ? await loadTrees(tx, [...(await rootsOf(tx, members.sharing)).values()]) : undefined;
        sharingTrees = found ?? { providers: [], inventories: [], traits: new Map() };
        for (const p of sharingTrees.providers) if (ids.has(p.id)) sharingRoots.add(p.rootId);
      }
      const batch = await loadTrees(tx, roots.filter((r) => !sharingRoots.has(r)));
      for (const p of batch.providers) rootOf.set(p.id, p.rootId);
      for (const p of sharingTrees!.providers) rootOf.set(p.id, p.rootId);
      const inBatch = new Set(roots);
      const scope: Scope = {
        inventories: [
          ...batch.inventories,
          ...sharingTrees!.inventories.filter((inv) => members.isSharing(inv.providerId) || inBatch.has(rootOf.get(inv.providerId)!)),
        ],
        rootOf,
        anchors: inBatch,
      };
      const data = firstBatch ? merge(sharingTrees!, batch) : batch;
      const planned = await plan(tx, query, names, treeRoots, members, scope);
      if (planned === EMPTY) return { anchors: [], data, after, done, scanned, optionsAt: noOptions };
      const { plans } = planned;
      // A sharing provider's own tree may lie outside the batch: it is combined when its batch comes.
      const anchors = [...plans[0].byAnchor.keys()].filter((a) => plans.every((p) => p.byAnchor.has(a)) && inBatch.has(a)).sort((x, y) => x - y);
      const optionsAt = (anchor: number) =>
        plans.map((p) =>
          p.kind === "options"
            ? p.byAnchor.get(anchor)!
            : [...spreadOptions(p.group.suffix, [...p.byAnchor.get(anchor)!.values()], (rp) => planned.traitsOf.get(rp), p.required, p.forbidden)],
        );
      return { anchors, data, after, done, scanned, optionsAt };
    },
    trees: names.hasTrees,
    rootOf: (id) => rootOf.get(id),
    isSharing: members.isSharing,
    onePerAnchor: false,
  };
}

const noOptions = (): GroupOption[][] => [];

/** Two loads of distinct trees as one. */
function merge(a: TreeData, b: TreeData): TreeData {
  return {
    providers: [...a.providers, ...b.providers].sort((x, y) => x.id - y.id),
    inventories: [...a.inventories, ...b.inventories],
    traits: new Map([...a.traits, ...b.traits]),
  };
}
