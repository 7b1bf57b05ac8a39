/**
 * The query string of GET /allocation_candidates: request groups (the
 * unsuffixed one plus `resources<S>`, `required<S>`, `member_of<S>`,
 * `in_tree<S>`) and the request-wide parameters (`limit`, `group_policy`,
 * `root_required`, `same_subtree`), validated per microversion against
 * schemas/allocation-candidates.ts, then parsed the way Placement does, in the
 * same order, with the same 400s and error codes.
 */
import { badRequest, ErrorCode } from "../http/errors.js";
import type { Microversion } from "../http/microversion.js";
import { pyRepr } from "../http/validation.js";
import { CANDIDATES_QUERY, LIMIT, NAMED_SUFFIX, NUMBERED_SUFFIX } from "../schemas/allocation-candidates.js";
import { allValues, validateQuery, type QueryPairs } from "./query-string.js";
import {
  parseInTree,
  parseMemberOfValues,
  parseResources,
  parseRootRequired,
  parseTraitValues,
  type AggregateFilter,
  type TraitFilter,
} from "./values.js";

export interface RequestGroup {
  /** "" for the unsuffixed group. */
  suffix: string;
  /** Granular (suffixed) groups must be satisfied by one provider; the unsuffixed one may span a tree and sharing providers. */
  useSameProvider: boolean;
  /** Resource class name to amount, in the order given. */
  resources: Map<string, number>;
  traits: TraitFilter;
  aggregates: AggregateFilter;
  inTree?: string;
}

export interface RequestWideParams {
  limit?: number;
  groupPolicy?: "none" | "isolate";
  /** Traits the root of every candidate's tree must have / must not have. */
  rootRequired: string[];
  rootForbidden: string[];
  /** Each entry: suffixes whose providers must all sit under one of them. */
  sameSubtrees: string[][];
}

export interface CandidatesQuery {
  groups: RequestGroup[];
  params: RequestWideParams;
}

function parseRequestWide(pairs: QueryPairs): RequestWideParams {
  // The schema checked the last value; the first one is used (as Placement does), so check every one.
  const limits = allValues(pairs, "limit");
  for (const l of limits) {
    if (!LIMIT.safeParse(l).success) {
      throw badRequest(`Invalid query string parameters: ${pyRepr(l)} does not match '^[1-9][0-9]*$'\n\nFailed validating 'pattern' in schema['properties']['limit']`);
    }
  }
  const policies = allValues(pairs, "group_policy");
  for (const p of policies) {
    if (p !== "none" && p !== "isolate") {
      throw badRequest(`Invalid query string parameters: ${pyRepr(p)} is not one of ['none', 'isolate']`);
    }
  }
  const params: RequestWideParams = {
    limit: limits.length > 0 ? Number(limits[0]) : undefined,
    groupPolicy: policies[0] as RequestWideParams["groupPolicy"],
    rootRequired: [],
    rootForbidden: [],
    sameSubtrees: [],
  };
  const rootRequired = allValues(pairs, "root_required");
  if (rootRequired.length > 1) {
    throw badRequest("Query parameter 'root_required' may be specified only once.", ErrorCode.ILLEGAL_DUPLICATE_QUERYPARAM);
  }
  if (rootRequired.length === 1) {
    const { required, forbidden } = parseRootRequired(rootRequired[0]);
    params.rootRequired = required;
    params.rootForbidden = forbidden;
  }
  for (const value of allValues(pairs, "same_subtree")) {
    const suffixes = [...new Set(value.split(",").map((s) => s.trim()))];
    if (suffixes.includes("")) {
      throw badRequest("Empty string (unsuffixed group) can not be specified in `same_subtree` ", ErrorCode.QUERYPARAM_BAD_VALUE);
    }
    params.sameSubtrees.push(suffixes);
  }
  return params;
}

/** Groups by suffix, in the order their first key appears. */
function parseGroups(pairs: QueryPairs, mv: Microversion): RequestGroup[] {
  const suffix = mv.atLeast("1.33") ? NAMED_SUFFIX : NUMBERED_SUFFIX;
  const key = new RegExp(`^(resources|required|member_of|in_tree)(${suffix})?$`);
  const bySuffix = new Map<string, RequestGroup>();
  for (const [name, value] of pairs) {
    const match = key.exec(name);
    if (!match) continue;
    const [, prefix, s = ""] = match;
    let group = bySuffix.get(s);
    if (!group) {
      group = {
        suffix: s,
        useSameProvider: s !== "",
        resources: new Map(),
        traits: { required: [], forbidden: new Set() },
        aggregates: { memberOf: [], forbidden: new Set() },
      };
      bySuffix.set(s, group);
    }
    if (prefix === "resources") group.resources = parseResources(value);
    else if (prefix === "required") group.traits = parseTraitValues(allValues(pairs, name), mv);
    else if (prefix === "member_of") group.aggregates = parseMemberOfValues(allValues(pairs, name), s, mv);
    else group.inTree = parseInTree(value);
  }
  return [...bySuffix.values()];
}

/** Before 1.36 every group needs resources; from 1.36 a resourceless group must be named in same_subtree. */
function checkGroupShapes(groups: RequestGroup[], params: RequestWideParams, mv: Microversion): void {
  if (mv.atLeast("1.36")) {
    const resourceless = groups.filter((g) => g.resources.size === 0).map((g) => g.suffix);
    if (resourceless.length === groups.length) {
      throw badRequest("There must be at least one resources or resources[$S] parameter.", ErrorCode.QUERYPARAM_MISSING_VALUE);
    }
    const inSubtrees = new Set(params.sameSubtrees.flat());
    const bad = resourceless.filter((s) => !inSubtrees.has(s));
    if (bad.length > 0) {
      throw badRequest(
        `Resourceless suffixed group request should be specified in \`same_subtree\` query param: bad group(s) - ${pyRepr(bad)}.`,
        ErrorCode.QUERYPARAM_BAD_VALUE,
      );
    }
    const known = new Set(groups.map((g) => g.suffix));
    const unknown = [...inSubtrees].filter((s) => !known.has(s));
    if (unknown.length > 0) {
      throw badRequest(
        `Real suffixes should be specified in \`same_subtree\`: ${pyRepr(unknown)} not found in ${pyRepr([...known])}.`,
        ErrorCode.QUERYPARAM_BAD_VALUE,
      );
    }
    return;
  }
  const orphanTraits = groups.filter((g) => g.traits.required.length > 0 && g.resources.size === 0);
  if (orphanTraits.length > 0) {
    throw badRequest(
      `All traits parameters must be associated with resources.  Found the following orphaned traits keys: ${orphanTraits.map((g) => `required${g.suffix}`).join(", ")}`,
    );
  }
  const orphanAggs = groups.filter(
    (g) => g.resources.size === 0 && (g.aggregates.memberOf.length > 0 || g.aggregates.forbidden.size > 0),
  );
  if (orphanAggs.length > 0) {
    throw badRequest(
      `All member_of parameters must be associated with resources. Found the following orphaned member_of keys: ${orphanAggs.map((g) => `member_of${g.suffix}`).join(", ")}`,
    );
  }
  if (!groups.every((g) => g.resources.size > 0)) throw badRequest("All request groups must specify resources.");
  if (groups.length === 0) {
    throw badRequest("At least one request group (`resources` or `resources{$S}`) is required.");
  }
}

/** A trait both required (as the whole of an any-of set) and forbidden in one group can never match. */
function checkConflictingTraits(groups: RequestGroup[]): void {
  const conflicts: string[] = [];
  for (const g of groups) {
    for (const anyOf of g.traits.required) {
      if (anyOf.every((t) => g.traits.forbidden.has(t))) conflicts.push(`required${g.suffix}: (${[...anyOf].sort().join(", ")})`);
    }
  }
  if (conflicts.length > 0) {
    throw badRequest(`Conflicting required and forbidden traits found in the following traits keys: ${conflicts.sort().join(", ")}`);
  }
}

/** Parses and validates the whole query string of GET /allocation_candidates for microversion `mv`. */
export function parseCandidatesQuery(pairs: QueryPairs, mv: Microversion): CandidatesQuery {
  validateQuery(CANDIDATES_QUERY.at(mv), pairs);
  const params = parseRequestWide(pairs);
  const groups = parseGroups(pairs, mv);
  checkGroupShapes(groups, params, mv);
  if (mv.atLeast("1.22")) checkConflictingTraits(groups);
  if (!params.groupPolicy && groups.filter((g) => g.useSameProvider).length > 1) {
    throw badRequest(
      'The "group_policy" parameter is required when specifying more than one "resources{N}" parameter.',
    );
  }
  return { groups, params };
}
