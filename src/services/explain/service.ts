/**
 * Why a candidates query finds what it finds (GET /allocation_candidates/explain,
 * `placement explain`; docs/explain.md): how many allocation requests it
 * answers, how many providers each request group keeps filter after filter,
 * how many trees keep a candidate as the constraints that combine groups are
 * added one at a time, and the trees that came closest.
 *
 * Nothing here restates a rule of the candidates engine:
 * - the count of allocation requests is the real candidates service run into
 *   a sink that counts (without the query's limit), so it is the length of
 *   the candidates answer by construction, with the same 400s;
 * - each tree stage is the same service run on the query with the later
 *   combining constraints left out, counting the distinct trees its
 *   candidates are anchored on; the last stage is the whole query;
 * - the group funnels are the rules of ../rules/ applied to each provider on
 *   its own (filters.ts), over the cloud view the candidates service answers
 *   from, at one state of it (CloudView.read).
 * So a funnel costs a few candidates answers (one per combining constraint
 * the query has) plus a pass over the providers per request group.
 *
 * A cloud too large for the service to keep a copy of is read whole into a
 * copy made for this one request and dropped after it: an operator's
 * question, asked rarely, may cost that memory for its duration.
 */
import { sql } from "drizzle-orm";
import type { Db } from "../../db/database.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import { CloudView, type ViewProvider, type ViewRead } from "../candidates/cloud-view.js";
import type { Candidate } from "../candidates/combine.js";
import type { FlatAnswer } from "../candidates/flat-answer.js";
import type { NamesById } from "../candidates/generate.js";
import { viewNames, type CandidatesSink } from "../candidates/service.js";
import { namesKnown } from "../candidates/unknown-names.js";
import type { CandidatesAnswerer } from "../replica-candidates.js";
import { groupFilters, type ProviderFilter } from "./filters.js";

export interface GroupFunnel {
  suffix: string;
  filters: Array<{ filter: string; remaining: number }>;
  /** Providers left after every filter of the group. */
  providers: number;
}

export interface TreeStage {
  constraint: string;
  /** Trees (root providers) that still anchor a candidate. */
  remaining: number;
}

/** A tree that anchors no candidate, named by its root. */
export interface NearMiss {
  uuid: string;
  /** Null when the provider was deleted after the funnel was made. */
  name: string | null;
  short: string[];
}

export interface Explanation {
  allocationRequests: number;
  groups: GroupFunnel[];
  trees: TreeStage[];
  nearest: NearMiss[];
}

/** How many near misses an explanation lists. */
export const NEAREST = 5;

/** The first tree stage: the groups only have to fit together on one tree (and the sharing providers its aggregates reach). */
export const ONE_TREE = "every group on one tree";
export const ONE_TREE_SHARING = "every group on one tree or the sharing providers of its aggregates";

/** Explains `query` at microversion 1.29's `nestedAware`, from the cloud `candidates` answers from. */
export async function explainCandidates(candidates: CandidatesAnswerer, db: Db, query: CandidatesQuery, nestedAware: boolean): Promise<Explanation> {
  const whole: CandidatesQuery = { groups: query.groups, params: { ...query.params, limit: undefined } };
  // First, so a query the candidates service refuses is refused here with the same error.
  const answer = await countCandidates(candidates, whole, nestedAware);
  const judged = (await candidates.readView(viewNames(whole), (read) => judge(read, whole))) ?? (await judgeWholeCloud(db, whole));

  const stages = treeStages(whole, judged.sharing);
  const roots: Array<ReadonlySet<string>> = [];
  for (const [i, stage] of stages.entries()) {
    if (i === stages.length - 1) roots.push(answer.roots);
    // A name the database does not know: no stage has a candidate (and the service may refuse a stage's query).
    else roots.push(judged.namesKnown ? (await countCandidates(candidates, stage.query, nestedAware)).roots : new Set());
  }
  const trees = stages.map((s, i) => ({ constraint: s.constraint, remaining: roots[i].size }));

  // A tree that anchors a candidate, or a provider that serves one (a sharing provider), is no miss.
  const misses = judged.trees.filter((t) => !answer.roots.has(t.uuid) && !answer.used.has(t.uuid));
  misses.sort((a, b) => a.shortfalls - b.shortfalls || a.id - b.id);
  const nearest = misses.slice(0, NEAREST);
  const names = await providerNames(db, nearest.flatMap((t) => [t.uuid, ...t.short.flatMap((s) => s.on ?? [])]));
  const several = whole.groups.length > 1;
  return {
    allocationRequests: answer.count,
    groups: judged.groups,
    trees,
    nearest: nearest.map((t) => {
      const short = t.short.map((s) => {
        const where = [several ? groupName(s.suffix) : "", s.on ? `on ${names.get(s.on) ?? s.on}` : ""].filter(Boolean).join(" ");
        return where ? `${where}: ${s.text}` : s.text;
      });
      if (short.length === 0) {
        // Every group has a provider in the tree: a combining constraint is what leaves it out.
        const stage = stages.findIndex((_, i) => !roots[i].has(t.uuid));
        short.push(`its tree anchors no candidate once ${stages[stage].constraint}`);
      }
      return { uuid: t.uuid, name: names.get(t.uuid) ?? null, short };
    }),
  };
}

interface Count {
  count: number;
  /** Uuids of the roots of the trees the candidates are anchored on. */
  roots: Set<string>;
  /** Uuids of the providers the candidates take resources from or map a group to. */
  used: Set<string>;
}

/** Runs the candidates service on `query` into a sink that only counts. */
async function countCandidates(candidates: CandidatesAnswerer, query: CandidatesQuery, nestedAware: boolean): Promise<Count> {
  const out: Count = { count: 0, roots: new Set(), used: new Set() };
  const sink: CandidatesSink = {
    // Called unbound (the engine takes it as a callback).
    candidate: (c: Candidate, names: NamesById) => {
      out.count++;
      out.roots.add(names.uuidOf(c.anchorRootId));
      for (const r of c.resources) out.used.add(names.uuidOf(r.providerId));
      for (const o of c.groups) for (const p of o.providers) out.used.add(names.uuidOf(p));
    },
    end: () => undefined,
    flat: (answer: FlatAnswer) => {
      out.count += answer.anchors.length;
      // On a flat cloud every provider is a tree of its own.
      for (const a of answer.anchors) {
        out.roots.add(a.details.uuid);
        out.used.add(a.details.uuid);
      }
    },
    discard: () => {
      out.count = 0;
      out.roots.clear();
      out.used.clear();
      return true;
    },
  };
  await candidates.answer(query, nestedAware, sink);
  return out;
}

/** One reason a tree falls short: a filter of group `suffix` that the tree's provider `on` (undefined: its root) fails. */
interface Shortfall {
  suffix: string;
  on?: string;
  text: string;
}

/** A tree (a provider without a parent, with the providers under it) as a near miss. */
interface JudgedTree {
  id: number;
  /** The root's uuid. */
  uuid: string;
  /** How many filters the tree fails: for each group, those of its provider that comes closest to serving it. */
  shortfalls: number;
  short: Shortfall[];
}

interface Judged {
  groups: GroupFunnel[];
  trees: JudgedTree[];
  sharing: boolean;
  namesKnown: boolean;
}

/**
 * The group funnels, and each tree's shortfalls, at the one state of the
 * view `read` shows. Each filter judges one provider (filters.ts); a tree
 * is as short of serving a group as its provider that fails the fewest of
 * the group's filters (the first in id order among equals).
 */
function judge(read: ViewRead, query: CandidatesQuery): Judged {
  const providers = [...read.byUuid.values()].sort((a, b) => a.id - b.id);
  const rootOfUuid = (uuid: string) => read.byUuid.get(uuid)?.rootId;
  const filters = query.groups.map((g) => groupFilters(g, read.names, rootOfUuid));

  // remaining[g][i]: providers passing filters 0..i of group g, counted from each provider's first failure.
  const remaining = filters.map((f) => new Array<number>(f.length).fill(0));
  const passing = filters.map(() => 0);
  /** Per root id: for each group, the member failing the fewest of its filters, with those it fails. */
  const closest = new Map<number, { root?: ViewProvider; best: Array<{ member: ViewProvider; failed: ProviderFilter[] } | undefined> }>();
  for (const p of providers) {
    let tree = closest.get(p.rootId);
    if (!tree) closest.set(p.rootId, (tree = { best: filters.map(() => undefined) }));
    if (p.id === p.rootId) tree.root = p;
    for (const [g, list] of filters.entries()) {
      const failed = list.filter((f) => !f.passes(p));
      const first = failed.length === 0 ? list.length : list.indexOf(failed[0]);
      for (let i = 0; i < first; i++) remaining[g][i]++;
      if (failed.length === 0) passing[g]++;
      const best = tree.best[g];
      if (!best || failed.length < best.failed.length) tree.best[g] = { member: p, failed };
    }
  }
  const trees: JudgedTree[] = [];
  for (const { root, best } of closest.values()) {
    // A provider without a root (or whose root is gone) is in no tree: no candidate can use it.
    if (!root) continue;
    const short: Shortfall[] = [];
    for (const [g, b] of best.entries()) {
      if (!b) continue;
      const on = b.member === root ? undefined : b.member.uuid;
      for (const f of b.failed) short.push({ suffix: query.groups[g].suffix, on, text: f.short(b.member) });
    }
    trees.push({ id: root.id, uuid: root.uuid, shortfalls: short.length, short });
  }
  return {
    groups: query.groups.map((g, i) => ({
      suffix: g.suffix,
      filters: filters[i].map((f, j) => ({ filter: f.filter, remaining: remaining[i][j] })),
      providers: passing[i],
    })),
    trees,
    sharing: providers.some((p) => p.shares),
    namesKnown: namesKnown(query, read.names),
  };
}

const groupName = (suffix: string) => (suffix === "" ? "unsuffixed group" : `group ${suffix}`);

/** Bounds of a copy made for one request: any cloud (they are SQL int parameters). */
const NO_BOUND = 2 ** 31 - 1;

/** judge() over a copy of the whole cloud made for this request (the service keeps none of a cloud this large). */
async function judgeWholeCloud(db: Db, query: CandidatesQuery): Promise<Judged> {
  const once = new CloudView(db, { namedStatements: false, maxProviders: NO_BOUND, maxTreeProviders: NO_BOUND });
  const judged = await once.read(viewNames(query), (read) => judge(read, query));
  if (!judged) throw new Error("a cloud view without bounds declined to copy the cloud");
  return judged;
}

/** The query of one tree stage and what it adds. */
interface Stage {
  constraint: string;
  query: CandidatesQuery;
}

/**
 * The stages of the tree funnel: the groups on one tree, then each
 * combining constraint the query has, in a fixed order (group_policy=isolate,
 * each same_subtree, root_required), each stage's query adding one to the
 * one before.
 */
function treeStages(query: CandidatesQuery, sharing: boolean): Stage[] {
  const { params } = query;
  let current: CandidatesQuery = {
    groups: query.groups,
    params: { ...params, groupPolicy: undefined, sameSubtrees: [], rootRequired: [], rootForbidden: [] },
  };
  const stages: Stage[] = [{ constraint: sharing ? ONE_TREE_SHARING : ONE_TREE, query: current }];
  const add = (constraint: string, change: Partial<CandidatesQuery["params"]>) => {
    current = { groups: query.groups, params: { ...current.params, ...change } };
    stages.push({ constraint, query: current });
  };
  if (params.groupPolicy === "isolate") add("group_policy:isolate", { groupPolicy: "isolate" });
  for (const [i, suffixes] of params.sameSubtrees.entries()) add(`same_subtree:${suffixes.join(",")}`, { sameSubtrees: params.sameSubtrees.slice(0, i + 1) });
  if (params.rootRequired.length > 0 || params.rootForbidden.length > 0) {
    const traits = [...params.rootRequired, ...params.rootForbidden.map((t) => `!${t}`)];
    add(`root_required:${traits.join(",")}`, { rootRequired: params.rootRequired, rootForbidden: params.rootForbidden });
  }
  return stages;
}

async function providerNames(db: Db, uuids: string[]): Promise<Map<string, string>> {
  if (uuids.length === 0) return new Map();
  const res = await db.execute<{ uuid: string; name: string }>(sql`SELECT uuid, name FROM resource_providers WHERE uuid = ANY(${sql.param(uuids)}::varchar[])`);
  return new Map(res.rows.map((r) => [r.uuid, r.name]));
}
