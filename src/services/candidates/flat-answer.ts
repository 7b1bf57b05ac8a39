/**
 * The answer on a flat cloud (every provider a tree of one, none sharing):
 * each candidate is one provider that takes every group's resources and
 * meets every group's filters, found by one pass over the providers of the
 * in-memory copy (cloud-view.ts) in id order, with the rules' in-memory
 * predicates (rules/). Several groups asking for one class on the one
 * provider are checked as Placement's merge does (canTakeAmounts): per class
 * the smallest amount against min_unit, their sum against max_unit and
 * capacity, and their gcd against step_size. The pass is a few set and
 * array lookups per provider, with no allocation per provider that the
 * answer does not keep.
 */
import type { CandidatesQuery, RequestGroup } from "../../query/request-groups.js";
import { canTakeAmounts } from "../rules/capacity.js";
import { allows, isEmptyExpression, type MembershipExpression } from "../rules/memberships.js";
import { inTree, rootTraitExpression } from "../rules/trees.js";
import { shuffle } from "./combine.js";
import type { KeptDetails, ViewProvider, ViewRead } from "./cloud-view.js";
import type { IdsByName } from "./sql/names.js";

export interface FlatAnchor {
  /** The provider's id (what a caller that locks and writes the candidate names it by). */
  id: number;
  /** The kept object itself (the same object until the provider changes), so renderers can key on it. */
  details: KeptDetails;
  /** Non-zero usage as [classId, used, classId, used, ...]; classes without usage are absent (undefined when the provider has none). */
  used: readonly number[] | undefined;
}

export interface FlatAnswer {
  names: IdsByName;
  anchors: FlatAnchor[];
  /** Every resource class id to its name (the summaries name classes nobody asked for). */
  classNames: Map<number, string>;
}

/** Whether the flat answer can take this request on a flat cloud (otherwise the engine does). */
export function flatAnswerTakes(query: CandidatesQuery): boolean {
  // Resourceless groups are rare: the engine handles them.
  return !query.groups.some((g) => g.resources.size === 0);
}

/** Per requested class: smallest amount, sum, gcd (see the header). */
export function classRequests(groups: RequestGroup[]): Map<string, { smallest: number; sum: number; gcd: number }> {
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  const out = new Map<string, { smallest: number; sum: number; gcd: number }>();
  for (const g of groups) {
    for (const [rc, amount] of g.resources) {
      const r = out.get(rc);
      if (!r) out.set(rc, { smallest: amount, sum: amount, gcd: amount });
      else out.set(rc, { smallest: Math.min(r.smallest, amount), sum: r.sum + amount, gcd: gcd(r.gcd, amount) });
    }
  }
  return out;
}

/**
 * The flat answer to `query` over a read of a flat cloud, at most `limit`
 * candidates: the first in id order, or with `randomize` a random sample of
 * them in random order.
 */
export function flatAnswer(read: ViewRead, query: CandidatesQuery, { limit, randomize }: { limit: number | undefined; randomize: boolean }): FlatAnswer {
  const anchors = read.providers.length === 0 ? [] : matching(read, query, randomize ? undefined : limit);
  if (randomize) shuffle(anchors);
  if (limit !== undefined && anchors.length > limit) anchors.length = limit;
  return { names: read.names, anchors, classNames: read.classNames };
}

/** The providers that take the whole request, in id order, at most `limit` (all when undefined). */
function matching(read: ViewRead, query: CandidatesQuery, limit: number | undefined): ViewProvider[] {
  const { names, byUuid } = read;
  const { groups, params } = query;
  // A name the database does not know matches nothing (an unknown trait or class sends the request to the engine first).
  const traitIds = (list: Iterable<string>) => [...list].flatMap((t) => names.traits.get(t) ?? []);
  const aggregateIds = (list: Iterable<string>) => [...list].flatMap((a) => names.aggregates.get(a) ?? []);
  const traits: MembershipExpression[] = groups.map((g) => ({ anyOf: g.traits.required.map(traitIds), forbidden: traitIds(g.traits.forbidden) }));
  // A flat provider is its own root.
  traits.push(rootTraitExpression(traitIds(params.rootRequired), traitIds(params.rootForbidden)));
  const aggs: MembershipExpression[] = groups.map((g) => ({ anyOf: g.aggregates.memberOf.map(aggregateIds), forbidden: aggregateIds(g.aggregates.forbidden) }));
  const requests = [...classRequests(groups)].map(([name, amounts]) => ({ classId: names.resourceClasses.get(name), ...amounts }));
  // Two granular groups can never be isolated on a tree of one provider.
  if (params.groupPolicy === "isolate" && groups.filter((g) => g.useSameProvider).length > 1) return [];
  // in_tree: on a flat cloud the tree of a provider is the provider; an unknown one means no candidates.
  let treeRoot: number | undefined;
  for (const g of groups) {
    if (!g.inTree) continue;
    const root = byUuid.get(g.inTree)?.id;
    if (root === undefined || (treeRoot !== undefined && root !== treeRoot)) return [];
    names.treeRoots.set(g.inTree, root);
    treeRoot = root;
  }

  // Empty expressions allow every provider: left out of the pass.
  const traitTests = traits.filter((e) => !isEmptyExpression(e));
  const aggregateTests = aggs.filter((e) => !isEmptyExpression(e));
  // The pass reads nothing else: requests that resolve to the same ids share it while the copy stays as it is (between
  // two writes to the cloud, however many schedulers ask), and after a write it is brought up to date from the providers
  // the write changed (a provider is in the answer or not on its own), not made again over every provider.
  const key = JSON.stringify([traitTests, aggregateTests, requests, treeRoot ?? null, limit ?? null]);
  const fits = (p: ViewProvider) => passes(p, treeRoot, traitTests, aggregateTests, requests);
  const made = read.evolve(
    `flat-answer ${key}`,
    () => pass(read.providers, fits, limit),
    (kept, changed, get) => passAgain(kept, changed, get, read.providers, fits, limit),
  );
  // A copy: callers shuffle and cut their answer.
  return made.passed.slice();
}

type ClassRequest = { classId: number | undefined; smallest: number; sum: number; gcd: number };

/**
 * A pass: the providers that passed, in id order. `through` is set when it
 * stopped at the limit: the id of the last provider it looked at (those past
 * it were not looked at); undefined, it looked at every provider.
 */
interface Pass {
  passed: ViewProvider[];
  through: number | undefined;
}

/** The providers that pass, in id order, at most `limit`: the plain pass, and the oracle of passAgain. */
function pass(providers: readonly ViewProvider[], fits: (p: ViewProvider) => boolean, limit: number | undefined): Pass {
  return passFrom(providers, 0, [], fits, limit);
}

/** Goes on with a pass from `providers[from]`, adding to `passed` until it holds `limit`. */
function passFrom(providers: readonly ViewProvider[], from: number, passed: ViewProvider[], fits: (p: ViewProvider) => boolean, limit: number | undefined): Pass {
  for (let i = from; i < providers.length; i++) {
    const p = providers[i];
    if (!fits(p)) continue;
    passed.push(p);
    if (passed.length === limit) return { passed, through: p.id };
  }
  return { passed, through: undefined };
}

/**
 * `kept`, a pass over an earlier state of the copy, brought up to date: the
 * providers in `changed` that it looked at leave it and those of them that
 * now pass come back, in id order; then it is cut at `limit` again, or, when
 * it was cut and now holds fewer, it goes on past where it stopped. The same
 * as a pass over the copy as it is, since whether a provider passes depends
 * on that provider alone (`providers`: the copy's, in id order). Undefined
 * (a pass is made again) when so many changed that a pass costs no more.
 */
function passAgain(
  kept: Pass,
  changed: ReadonlySet<number>,
  get: (id: number) => ViewProvider | undefined,
  providers: readonly ViewProvider[],
  fits: (p: ViewProvider) => boolean,
  limit: number | undefined,
): Pass | undefined {
  if (changed.size > kept.passed.length / 4 + 16) return undefined;
  const { through } = kept;
  const back: ViewProvider[] = [];
  for (const id of changed) {
    // Past the cut, the pass goes on below if it needs to, and looks at every provider there.
    if (through !== undefined && id > through) continue;
    const p = get(id);
    if (p !== undefined && fits(p)) back.push(p);
  }
  back.sort((a, b) => a.id - b.id);
  const out: ViewProvider[] = [];
  let i = 0;
  for (const p of kept.passed) {
    if (changed.has(p.id)) continue;
    while (i < back.length && back[i].id < p.id) out.push(back[i++]);
    out.push(p);
  }
  while (i < back.length) out.push(back[i++]);
  if (limit !== undefined && out.length >= limit) {
    // Every provider up to the last one kept was looked at, now or before.
    out.length = limit;
    return { passed: out, through: out[limit - 1].id };
  }
  return through === undefined ? { passed: out, through } : passFrom(providers, firstPast(providers, through), out, fits, limit);
}

/** The place in `providers` (in id order) of the first provider whose id is above `id`. */
function firstPast(providers: readonly ViewProvider[], id: number): number {
  let lo = 0;
  let hi = providers.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (providers[mid].id <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether one provider takes the whole request (see matching). */
function passes(
  p: ViewProvider,
  treeRoot: number | undefined,
  traitTests: readonly MembershipExpression[],
  aggregateTests: readonly MembershipExpression[],
  requests: readonly ClassRequest[],
): boolean {
  // Loops, not every() with arrows: an arrow closing over the provider was three closures per provider per request.
  return inTree(p.id, treeRoot) && allowsEvery(p.traits, traitTests) && allowsEvery(p.aggregates, aggregateTests) && takesEvery(p, requests);
}

function allowsEvery(has: ReadonlySet<number>, tests: readonly MembershipExpression[]): boolean {
  for (const e of tests) if (!allows(has, e)) return false;
  return true;
}

function takesEvery(p: ViewProvider, requests: readonly ClassRequest[]): boolean {
  for (const r of requests) if (!takes(p, r.classId, r)) return false;
  return true;
}

function takes(p: ViewProvider, classId: number | undefined, amounts: { smallest: number; sum: number; gcd: number }): boolean {
  for (const inv of p.inventories) if (inv.resourceClassId === classId) return canTakeAmounts(inv, amounts);
  return false;
}
