/**
 * The pure half of the candidates engine: how ways of satisfying single
 * request groups combine into whole candidates. No database here, so every
 * rule (traits across a tree, group_policy=isolate, same_subtree, capacity
 * of a provider shared by several groups) is tested on plain data.
 *
 * Combination is a depth-first search over the groups, one anchor tree at a
 * time, and it is a generator: the caller pulls candidates until it has
 * enough (`limit`), so nothing is built that is not returned. Partial
 * combinations are pruned as soon as they break isolate or capacity, which
 * is what keeps wide symmetric trees (many same-class children, many groups)
 * from exploding: the first N answers come after O(N x groups) steps instead
 * of after enumerating children^groups products.
 */

import { canTakeSum } from "../rules/capacity.js";
import { allowTogether } from "../rules/memberships.js";

export interface ResourceRequest {
  providerId: number;
  resourceClassId: number;
  amount: number;
}

/** One way to satisfy one request group within one anchor tree. */
export interface GroupOption {
  suffix: string;
  /** Granular groups: one provider, which isolate keeps distinct across groups. */
  sameProvider: boolean;
  resources: ResourceRequest[];
  /** The providers this group maps to (one for granular groups; resourceless groups have one and no resources). */
  providers: number[];
}

/** A whole allocation candidate: what to claim from which provider, and which group each provider serves. */
export interface Candidate {
  anchorRootId: number;
  resources: ResourceRequest[];
  /**
   * The option taken for each request group, in request order; its
   * providers are the group's mappings (groups have distinct suffixes). Kept
   * as the options themselves, not a Map per candidate: the writer reads them
   * in order, and a Map for each of tens of thousands of candidates is garbage to collect.
   */
  groups: readonly GroupOption[];
}

/** A candidate's mappings: each group's suffix to the providers that serve it. */
export function mappingsOf(c: Candidate): Map<string, number[]> {
  return new Map(c.groups.map((o) => [o.suffix, o.providers]));
}

export interface Capacity {
  capacity: number;
  used: number;
  maxUnit: number;
}

/** How options combine; every option given to mergeGroups can take its own amounts (the planner's capacity check). */
export interface MergeRules {
  isolate: boolean;
  sameSubtrees: string[][];
  parentOf: (providerId: number) => number | null;
  capacityOf: (providerId: number, resourceClassId: number) => Capacity | undefined;
}

/**
 * The ways one tree can satisfy the unsuffixed group: one provider per
 * resource class (classes in id order, as Placement's product), where the
 * chosen providers together meet the group's trait expression. An odometer
 * over the classes, returning the list: every caller takes all of a tree's
 * options at once, and a generator cost an iterator result per option and a
 * generator object per call (a large nested answer makes tens of thousands).
 * `perClass` is sorted in place by class.
 */
export function spreadOptions(
  suffix: string,
  perClass: ResourceRequest[][],
  traitsOf: (providerId: number) => ReadonlySet<number> | undefined,
  required: number[][],
  forbidden: ReadonlySet<number>,
): GroupOption[] {
  const byTraits = required.length > 0 || forbidden.size > 0;
  const traitExpr = { anyOf: required, forbidden: [...forbidden] };
  // A provider with a forbidden trait can never be part of a valid choice.
  const usable = (rr: ResourceRequest) => {
    const traits = traitsOf(rr.providerId);
    if (!traits) return true;
    for (const t of traits) if (forbidden.has(t)) return false;
    return true;
  };
  const ordered = sortByKey(perClass, (rrs) => rrs[0].resourceClassId);
  const classes = ordered.length;
  const lists = forbidden.size === 0 ? ordered : ordered.map((rrs) => rrs.filter(usable));
  const out: GroupOption[] = [];
  for (const rrs of lists) if (rrs.length === 0) return out;
  const choice = new Array<number>(classes).fill(0);
  for (;;) {
    // Made at their full length (an array grown by push from empty takes room for 16).
    const resources = new Array<ResourceRequest>(classes);
    let distinct = 0;
    for (let i = 0; i < classes; i++) {
      const rr = lists[i][choice[i]];
      resources[i] = rr;
      let j = 0;
      while (j < i && resources[j].providerId !== rr.providerId) j++;
      if (j === i) distinct++;
    }
    const providers = new Array<number>(distinct);
    let count = 0;
    for (let i = 0; i < classes; i++) {
      const p = resources[i].providerId;
      let j = 0;
      while (j < count && providers[j] !== p) j++;
      if (j === count) providers[count++] = p;
    }
    if (!byTraits || allowTogether(providers, traitsOf, traitExpr)) {
      out.push({ suffix, sameProvider: false, resources, providers: sortByKey(providers, byValue) });
    }
    // Advance the last class first, so options come in product order.
    let i = classes - 1;
    while (i >= 0 && ++choice[i] === lists[i].length) choice[i--] = 0;
    if (i < 0) return out;
  }
}

const byValue = (n: number) => n;

/** True when one of `providers` is an ancestor (or self) of all the others. */
export function inSameSubtree(providers: number[], parentOf: (id: number) => number | null): boolean {
  if (providers.length <= 1) return true;
  const ancestry = (id: number): Set<number> => {
    const out = new Set<number>();
    for (let p: number | null = id; p !== null && !out.has(p); p = parentOf(p)) out.add(p);
    return out;
  };
  let common: Set<number> | undefined;
  for (const p of providers) {
    const a = ancestry(p);
    common = common ? new Set([...common].filter((x) => a.has(x))) : a;
  }
  return providers.some((p) => common!.has(p));
}

/**
 * Every combination of one option per group (groups in request order) for
 * one anchor tree, consolidated, that respects isolate, capacity and
 * same_subtree. Yields lazily, in product order.
 */
export function* mergeGroups(anchorRootId: number, options: GroupOption[][], rules: MergeRules): Generator<Candidate> {
  if (options.some((o) => o.length === 0)) return;
  if (options.length === 1 && rules.sameSubtrees.length === 0) {
    // One group: each option already passed the capacity query on its own, and there is nothing to combine.
    for (const option of options[0]) {
      yield { anchorRootId, resources: option.resources, groups: [option] };
    }
    return;
  }
  const picked: GroupOption[] = [];
  // What the picked options claim, as stacks: options are taken and given back last in, first
  // out, and a candidate claims a handful of (provider, class) pairs, so a scan beats a Map (whose
  // keys, provider x 10^6 + class, were heap numbers past provider 2,147). Each stack keeps its own
  // height: shrinking an array's length makes V8 trim its storage, to be allocated again at the next push.
  const claimed: ResourceRequest[] = [];
  let claimedCount = 0;
  const granulars: number[] = [];
  let granularCount = 0;

  // Each option passed the capacity check on its own (see MergeRules): only an inventory that an earlier
  // group also takes from needs the sum checked.
  const fits = (rrs: ResourceRequest[]): boolean => {
    for (const rr of rrs) {
      let total = rr.amount;
      for (let i = 0; i < claimedCount; i++) {
        const c = claimed[i];
        if (c.providerId === rr.providerId && c.resourceClassId === rr.resourceClassId) total += c.amount;
      }
      if (total === rr.amount) continue;
      const cap = rules.capacityOf(rr.providerId, rr.resourceClassId);
      if (!cap || !canTakeSum(cap, total)) return false;
    }
    return true;
  };

  // Depth-first over one option per group, as an odometer in one generator frame: a recursive
  // generator passes every candidate up through one `yield*` per group, which cost more than the
  // combining itself on large nested answers.
  const choice = new Array<number>(options.length).fill(-1);
  const take = (option: GroupOption) => {
    for (const rr of option.resources) claimed[claimedCount++] = rr;
    if (option.sameProvider) granulars[granularCount++] = option.providers[0];
  };
  const giveBack = (option: GroupOption) => {
    claimedCount -= option.resources.length;
    if (option.sameProvider) granularCount--;
  };
  const isolatedFrom = (provider: number) => {
    for (let i = 0; i < granularCount; i++) if (granulars[i] === provider) return false;
    return true;
  };
  const allowed = (option: GroupOption) => {
    if (rules.isolate && option.sameProvider && !isolatedFrom(option.providers[0])) return false;
    return fits(option.resources);
  };
  const last = options.length - 1;
  for (let level = 0; level >= 0; ) {
    const list = options[level];
    if (choice[level] >= 0) {
      giveBack(list[choice[level]]);
      picked.pop();
    }
    let i = choice[level] + 1;
    while (i < list.length && !allowed(list[i])) i++;
    if (i === list.length) {
      choice[level--] = -1;
      continue;
    }
    choice[level] = i;
    take(list[i]);
    picked.push(list[i]);
    if (level < last) level++;
    else if (satisfiesSameSubtrees(picked, rules)) yield consolidate(anchorRootId, picked);
  }
}

function satisfiesSameSubtrees(picked: GroupOption[], rules: MergeRules): boolean {
  for (const suffixes of rules.sameSubtrees) {
    const providers = new Set<number>();
    for (const o of picked) if (suffixes.includes(o.suffix)) for (const p of o.providers) providers.add(p);
    if (!inSameSubtree([...providers], rules.parentOf)) return false;
  }
  return true;
}

/**
 * One candidate from one option per group: amounts of the same provider and
 * class added up. The options' own request objects are shared, never changed
 * (a candidate names a handful of providers, so a scan beats a Map; only a
 * sum makes a new object).
 */
export function consolidate(anchorRootId: number, picked: readonly GroupOption[]): Candidate {
  // Made at its full length: an array grown by push from empty takes room for 16, and there is one per candidate.
  let most = 0;
  for (const option of picked) most += option.resources.length;
  const resources = new Array<ResourceRequest>(most);
  let count = 0;
  for (const option of picked) {
    for (const rr of option.resources) {
      let i = 0;
      while (i < count && (resources[i].providerId !== rr.providerId || resources[i].resourceClassId !== rr.resourceClassId)) i++;
      if (i === count) resources[count++] = rr;
      else resources[i] = { ...resources[i], amount: resources[i].amount + rr.amount };
    }
  }
  if (count < most) resources.length = count;
  return { anchorRootId, resources, groups: picked.slice() };
}

/**
 * Identity of a candidate regardless of its anchor: the same claims with the
 * same mappings reached from two anchor trees (a sharing provider serving a
 * whole request) are one candidate, as in Placement.
 */
export function candidateKey(c: Candidate): string {
  const rrs = c.resources.map((r) => `${r.providerId}:${r.resourceClassId}:${r.amount}`).sort();
  const maps = c.groups.map((o) => `${o.suffix}=${[...o.providers].sort((a, b) => a - b).join(",")}`).sort();
  return `${rrs.join(";")}|${maps.join(";")}`;
}

/** Candidates from several generators, one from each in turn (breadth-first across trees). */
export function* roundRobin<T>(sources: Iterable<Iterator<T>>): Generator<T> {
  let active = [...sources];
  while (active.length > 0) {
    const next: Iterator<T>[] = [];
    for (const it of active) {
      const r = it.next();
      if (!r.done) {
        yield r.value;
        next.push(it);
      }
    }
    active = next;
  }
}

/**
 * Sorts in place by a numeric key, allocating nothing when `items` is short
 * or already in order. Array.prototype.sort copies into a scratch array on
 * every call: over the many 1-to-5-element lists a request sorts (each
 * option's providers, each class's providers per tree) that was the largest
 * source of garbage after the candidates themselves (heap sampling), and
 * garbage here is time in GC.
 */
export function sortByKey<T>(items: T[], key: (item: T) => number): T[] {
  let sorted = true;
  for (let i = 1; i < items.length && sorted; i++) sorted = key(items[i - 1]) <= key(items[i]);
  if (sorted) return items;
  if (items.length > 16) return items.sort((a, b) => key(a) - key(b));
  // Insertion sort: the lists here hold a handful of items.
  for (let i = 1; i < items.length; i++) {
    const item = items[i];
    const k = key(item);
    let j = i - 1;
    for (; j >= 0 && key(items[j]) > k; j--) items[j + 1] = items[j];
    items[j + 1] = item;
  }
  return items;
}

/** Fisher-Yates, in place. */
export function shuffle<T>(items: T[], random: () => number = Math.random): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
