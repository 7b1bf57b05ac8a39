/** GET /allocation_candidates (from 1.10): the engine's answer shaped per microversion. */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import type { AppContext, AppDeps, AppEnv } from "../http/context.js";
import { setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { queryPairs } from "../query/query-string.js";
import { parseCandidatesQuery, type CandidatesQuery } from "../query/request-groups.js";
import { findCandidates, type CandidatesResult } from "../services/candidates/engine.js";

export function allocationCandidateRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  declareRoute(app, "/allocation_candidates", {
    GET: async (c) => {
      requireMicroversion(c, "1.10");
      authorize(c, "placement:allocation_candidates:list");
      const query = parseCandidatesQuery(queryPairs(c.req.url), c.get("microversion"));
      const mv = c.get("microversion");
      // One read-only snapshot: the narrowing queries and the tree loads must agree.
      const result = await deps.db.transaction(
        (tx) =>
          findCandidates(tx, query, {
            nestedAware: mv.atLeast("1.29"),
            randomize: deps.config.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
            maxCandidates: deps.config.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
            strategy: deps.config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
          }),
        { isolationLevel: "repeatable read", accessMode: "read only" },
      );
      setLastModified(c, new Date());
      return c.json(shape(c, query, result));
    },
  });
  return app;
}

/** The response body in one pass over the candidates and the summaries. */
function shape(c: AppContext, query: CandidatesQuery, r: CandidatesResult) {
  const mv = c.get("microversion");
  const dictForm = mv.atLeast("1.12");
  const withMappings = mv.atLeast("1.34");
  const allocationRequests = r.candidates.map((cand) => {
    const byProvider = new Map<string, Record<string, number>>();
    for (const rr of cand.resources) {
      const uuid = r.uuidOf(rr.providerId);
      let res = byProvider.get(uuid);
      if (!res) byProvider.set(uuid, (res = {}));
      res[r.resourceClassName(rr.resourceClassId)] = rr.amount;
    }
    if (!dictForm) {
      return { allocations: [...byProvider].map(([uuid, resources]) => ({ resource_provider: { uuid }, resources })) };
    }
    const allocations: Record<string, { resources: Record<string, number> }> = {};
    for (const [uuid, resources] of byProvider) allocations[uuid] = { resources };
    if (!withMappings) return { allocations };
    const mappings: Record<string, string[]> = {};
    for (const [suffix, providers] of cand.mappings) mappings[suffix] = providers.map(r.uuidOf);
    return { allocations, mappings };
  });

  const withTraits = mv.atLeast("1.17");
  const allClasses = mv.atLeast("1.27");
  const withTree = mv.atLeast("1.29");
  const requested = new Set(query.groups.flatMap((g) => [...g.resources.keys()]));
  const summaries: Record<string, Record<string, unknown>> = {};
  for (const s of r.summaries) {
    const resources: Record<string, { capacity: number; used: number }> = {};
    for (const inv of s.inventories) {
      if (allClasses || requested.has(inv.resourceClass)) resources[inv.resourceClass] = { capacity: inv.capacity, used: inv.used };
    }
    const summary: Record<string, unknown> = { resources };
    if (withTraits) summary.traits = s.traits;
    if (withTree) {
      summary.parent_provider_uuid = r.parentUuidOf(s.provider);
      summary.root_provider_uuid = r.rootUuidOf(s.provider);
    }
    summaries[s.provider.uuid] = summary;
  }
  return { allocation_requests: allocationRequests, provider_summaries: summaries };
}
