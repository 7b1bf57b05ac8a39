/**
 * GET /allocation_candidates/explain?<allocation candidates query> (an
 * extension; docs/explain.md): the query string of GET
 * /allocation_candidates at the request's microversion, through the same
 * parser with the same 400s (`limit` is accepted and ignored), answered with
 * the funnel of services/explain/.
 */
import { Hono } from "hono";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { declareRoute } from "../http/routing.js";
import { explainCandidates, explainSource, explanationBody } from "../services/explain/service.js";
import { candidatesRequest } from "./candidates-request.js";

export function explainRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  declareRoute(app, "/allocation_candidates/explain", {
    GET: async (c) => {
      const { mv, query } = candidatesRequest(c, "placement:allocation_candidates:explain");
      const e = await explainCandidates(explainSource(deps.services.candidates, mv), deps.db, query);
      return c.json(explanationBody(e));
    },
  }, { getSince: "1.10" });
  return app;
}
