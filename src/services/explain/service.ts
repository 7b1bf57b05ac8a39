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
import { answerShape } from "../candidates/answer-shape.js";
import { sql } from "drizzle-orm";
import type { Db } from "../../db/database.js";
import type { Microversion } from "../../http/microversion.js";
import type { CandidatesQuery } from "../../query/request-groups.js";
import { CloudView, type ViewNames, type ViewRead } from "../candidates/cloud-view.js";
import type { TreeMember } from "../candidates/cloud-trees.js";
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

/** The answer's JSON: what GET /allocation_candidates/explain answers and `placement explain --json` prints. */
export const explanationBody = (e: Explanation) => ({ allocation_requests: e.allocationRequests, groups: e.groups, trees: e.trees, nearest: e.nearest });

/** How many near misses an explanation lists. */
const NEAREST = 5;

/** The first tree stage: the groups only have to fit together on one tree (and the sharing providers its aggregates reach). */
const ONE_TREE = "every group on one tree";
const ONE_TREE_SHARING = "every group on one tree or the sharing providers of its aggregates";

/**
 * What an explanation reads: the candidates service's answer at the
 * request's microversion, and the cloud view it answers from
 * (CandidatesService.readView).
 */
export interface ExplainSource {
  answer(query: CandidatesQuery, sink: CandidatesSink): Promise<unknown>;
  readView<T>(wanted: ViewNames, use: (read: ViewRead) => T): Promise<T | undefined>;
}

/** The source of explanations at the request's microversion `mv`, from the candidates service (or the replica router) `candidates`. */
export function explainSource(candidates: CandidatesAnswerer, mv: Microversion): ExplainSource {
  const shape = answerShape(mv);
  return { answer: (query, sink) => candidates.answer(query, shape, sink), readView: (wanted, use) => candidates.readView(wanted, use) };
}

/** Explains `query` from `source`; `db` names the near misses (and reads a cloud too large for the view's copy). */
export async function explainCandidates(source: ExplainSource, db: Db, query: CandidatesQuery): Promise<Explanation> {
  const whole: CandidatesQuery = { groups: query.groups, params: { ...query.params, limit: undefined } };
  // First, so a query the candidates service refuses is refused here with the same error.
  const answer = await countCandidates(source, whole);
  // A tree that anchors a candidate, or a provider that serves one (a sharing provider), is no miss.
  const served = (rootUuid: string) => answer.roots.has(rootUuid) || answer.used.has(rootUuid);
  const judged = (await source.readView(viewNames(whole), (read) => judge(read, whole, served))) ?? (await judgeWholeCloud(db, whole, served));

  const stages = treeStages(whole, judged.sharing);
  const roots: Array<ReadonlySet<string>> = [];
  for (const [i, stage] of stages.entries()) {
    if (i === stages.length - 1) roots.push(answer.roots);
    // A name the database does not know: no stage has a candidate (and the service may refuse a stage's query).
    // Each stage adds a constraint, so after a stage that left no tree none can: no query for those.
    else if (!judged.namesKnown || (i > 0 && roots[i - 1].size === 0)) roots.push(new Set());
    else roots.push((await countCandidates(source, stage.query)).roots);
  }
  const trees = stages.map((s, i) => ({ constraint: s.constraint, remaining: roots[i].size }));

  const nearest = judged.nearest.map((t) => ({ uuid: t.uuid, short: shortfallsOf(t, judged.filters, whole) }));
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
  /** Uuids of the providers the candidates take resources from or map a group to (but for a flat answer's, all in `roots`). */
  used: Set<string>;
}

/** Runs the candidates service on `query` into a sink that only counts. */
async function countCandidates(source: ExplainSource, query: CandidatesQuery): Promise<Count> {
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
      // On a flat cloud every provider is a tree of its own, and serves only the candidate anchored on it.
      for (const a of answer.anchors) out.roots.add(a.details.uuid);
    },
    discard: () => {
      out.count = 0;
      out.roots.clear();
      out.used.clear();
      return true;
    },
  };
  await source.answer(query, sink);
  return out;
}

/** A tree (a provider without a parent, with the providers under it) as a near miss. */
interface JudgedTree {
  id: number;
  /** The root's uuid. */
  uuid: string;
  root: TreeMember;
  /** For each group, the tree's provider that fails the fewest of its filters (the first in id order among equals). */
  closest: TreeMember[];
  /** How many filters those providers fail, all groups together. */
  shortfalls: number;
}

interface Judged {
  groups: GroupFunnel[];
  /** Each group's filters (filters.ts), in funnel order. */
  filters: ProviderFilter[][];
  /** The trees closest to anchoring a candidate (fewest shortfalls, then root id), at most NEAREST. */
  nearest: JudgedTree[];
  sharing: boolean;
  namesKnown: boolean;
}

/**
 * The group funnels, and the trees that come closest to anchoring a
 * candidate among those `served` does not rule out, at the one state of the
 * view `read` shows. Each filter judges one provider (filters.ts); a tree is
 * as short of serving a group as its provider that fails the fewest of the
 * group's filters. Only counts are kept for the other trees: the reasons are
 * worded for the few near misses alone (shortfallsOf).
 */
function judge(read: ViewRead, query: CandidatesQuery, served: (rootUuid: string) => boolean): Judged {
  const rootOfUuid = (uuid: string) => read.byUuid.get(uuid)?.rootId;
  const filters = query.groups.map((g) => groupFilters(g, read.names, rootOfUuid));

  // remaining[g][i]: providers passing filters 0..i of group g, counted from each provider's first failure.
  const remaining = filters.map((f) => new Array<number>(f.length).fill(0));
  const passing = filters.map(() => 0);
  const nearest: JudgedTree[] = [];
  const closer = (shortfalls: number, id: number, than: JudgedTree) => shortfalls - than.shortfalls || id - than.id;
  // Reused for every tree, copied for the few kept: a cloud has as many trees as providers when it is flat.
  const closest: TreeMember[] = [];
  const judgeTree = (root: TreeMember, members: readonly TreeMember[]) => {
    let shortfalls = 0;
    for (let g = 0; g < filters.length; g++) {
      const list = filters[g];
      let fewest = Infinity;
      for (const p of members) {
        let first = list.length;
        let failed = 0;
        for (let i = 0; i < list.length; i++) {
          if (list[i].passes(p)) continue;
          if (failed++ === 0) first = i;
        }
        for (let i = 0; i < first; i++) remaining[g][i]++;
        if (failed === 0) passing[g]++;
        // Members come in id order: the first of the closest stands for the tree.
        if (failed < fewest) {
          fewest = failed;
          closest[g] = p;
        }
      }
      shortfalls += fewest;
    }
    // Kept in order as the trees go by; the cheap comparison first, the lookup in the answer only for a tree that would be kept.
    if (nearest.length === NEAREST && closer(shortfalls, root.id, nearest[NEAREST - 1]) >= 0) return;
    if (served(root.uuid)) return;
    let at = nearest.length;
    while (at > 0 && closer(shortfalls, root.id, nearest[at - 1]) < 0) at--;
    nearest.splice(at, 0, { id: root.id, uuid: root.uuid, root, closest: closest.slice(0, filters.length), shortfalls });
    if (nearest.length > NEAREST) nearest.pop();
  };
  // A flat cloud's providers are each a tree; otherwise the copy's trees (a provider without a root is in none).
  const one: TreeMember[] = [];
  if (read.flat) {
    for (const p of read.providers) {
      one[0] = p;
      judgeTree(p, one);
    }
  } else for (const t of read.trees().list) judgeTree(t.members.find((m) => m.id === t.rootId)!, t.members);
  return {
    groups: query.groups.map((g, i) => ({
      suffix: g.suffix,
      filters: filters[i].map((f, j) => ({ filter: f.filter, remaining: remaining[i][j] })),
      providers: passing[i],
    })),
    filters,
    nearest,
    sharing: read.names.hasSharing,
    namesKnown: namesKnown(query, read.names),
  };
}

/** One reason a tree falls short: a filter of group `suffix` that the tree's provider `on` (undefined: its root) fails. */
interface Shortfall {
  suffix: string;
  on?: string;
  text: string;
}

/** What the providers that stand for `tree` lack, group by group, filter by filter. */
function shortfallsOf(tree: JudgedTree, filters: ProviderFilter[][], query: CandidatesQuery): Shortfall[] {
  const out: Shortfall[] = [];
  for (const [g, member] of tree.closest.entries()) {
    const on = member === tree.root ? undefined : member.uuid;
    for (const f of filters[g]) if (!f.passes(member)) out.push({ suffix: query.groups[g].suffix, on, text: f.short(member) });
  }
  return out;
}

const groupName = (suffix: string) => (suffix === "" ? "unsuffixed group" : `group ${suffix}`);

/** Bounds of a copy made for one request: any cloud (they are SQL int parameters). */
const NO_BOUND = 2 ** 31 - 1;

/** judge() over a copy of the whole cloud made for this request (the service keeps none of a cloud this large). */
async function judgeWholeCloud(db: Db, query: CandidatesQuery, served: (rootUuid: string) => boolean): Promise<Judged> {
  const once = new CloudView(db, { maxProviders: NO_BOUND, maxTreeProviders: NO_BOUND });
  const judged = await once.read(viewNames(query), (read) => judge(read, query, served));
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
