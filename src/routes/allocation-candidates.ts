/** GET /allocation_candidates (from 1.10): parse, authorize, one service call, the body per microversion. */
import { Hono } from "hono";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { setLastModified } from "../http/last-modified.js";
import { whenSent } from "../http/node-bindings.js";
import { declareRoute } from "../http/routing.js";
import { CandidatesBody } from "../render/candidates/body.js";
import { FastRenderer } from "../render/candidates/fast.js";
import { answerShape } from "../services/candidates/answer-shape.js";
import { candidatesRequest } from "./candidates-request.js";

export function allocationCandidateRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { cache, budget } = deps.services.render;
  declareRoute(app, "/allocation_candidates", {
    GET: async (c) => {
      const { mv, query } = candidatesRequest(c, "placement:allocation_candidates:list");
      const shape = answerShape(mv);
      const body = new CandidatesBody(new FastRenderer(shape, query, cache), cache, budget);
      const answering = deps.services.candidates.answer(query, shape, body);
      answering.then(
        () => deps.metrics.candidatesReturned(body.written),
        () => undefined, // answered through body.respond
      );
      const bytes = await body.respond(answering, (error) =>
        deps.log.error("allocation candidates failed while streaming", { requestId: c.get("requestId"), error: error.message }),
      );
      whenSent(c, () => body.recycle());
      setLastModified(c, new Date());
      return c.body(bytes, 200, { "content-type": "application/json" });
    },
  }, { getSince: "1.10" });
  return app;
}
