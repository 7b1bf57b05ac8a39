/**
 * GET /allocation_candidates/explain?<allocation candidates query> (an
 * extension; docs/explain.md): the query string of GET
 * /allocation_candidates at the request's microversion, through the same
 * parser with the same 400s (`limit` is accepted and ignored), answered with
 * the funnel of services/explain/.
 */
import { answerShape } from "../services/candidates/answer-shape.js";
import { Hono } from "hono";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { declareRoute } from "../http/routing.js";
import { explainCandidates } from "../services/explain/service.js";
import { candidatesRequest } from "./candidates-request.js";

export function explainRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  declareRoute(app, "/allocation_candidates/explain", {
    GET: async (c) => {
      const { mv, query } = candidatesRequest(c, "placement:allocation_candidates:explain");
      const e = await explainCandidates(deps.services.candidates, deps.db, query, answerShape(mv));
      return c.json({ allocation_requests: e.allocationRequests, groups: e.groups, trees: e.trees, nearest: e.nearest });
    },
  }, { getSince: "1.10" });
  return app;
}
