/**
 * How GET /allocation_candidates and POST /claims both begin: the version
 * gate (1.10), the caller's rule (so a refused caller gets 403 before any
 * query error), then the candidates query parsed for the request's
 * microversion (schemas/allocation-candidates.ts, query/request-groups.ts).
 */
import { authorize } from "../auth/policy.js";
import type { ApiRuleName } from "../auth/policy-defaults.js";
import type { AppContext } from "../http/context.js";
import type { Microversion } from "../http/microversion.js";
import { requireMicroversion } from "../http/routing.js";
import { queryPairs } from "../query/query-string.js";
import { parseCandidatesQuery, type CandidatesQuery } from "../query/request-groups.js";

export function candidatesRequest(c: AppContext, rule: ApiRuleName): { mv: Microversion; query: CandidatesQuery } {
  requireMicroversion(c, "1.10");
  authorize(c, rule);
  const mv = c.get("microversion");
  return { mv, query: parseCandidatesQuery(queryPairs(c.req.url), mv) };
}
