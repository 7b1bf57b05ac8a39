/** GET /allocation_candidates (from 1.10): the engine's answer shaped per microversion. */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { queryPairs } from "../query/query-string.js";
import { parseCandidatesQuery } from "../query/request-groups.js";
import { checkNames, findCandidates } from "../services/candidates/engine.js";
import { flatCandidates, flatEligible } from "../services/candidates/flat-sql.js";
import { CandidatesBody } from "./candidates-body.js";
import { responseShape } from "./candidates-shape.js";
import { renderFlatBody } from "./flat-candidates-body.js";

export function allocationCandidateRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  declareRoute(app, "/allocation_candidates", {
    GET: async (c) => {
      requireMicroversion(c, "1.10");
      authorize(c, "placement:allocation_candidates:list");
      const query = parseCandidatesQuery(queryPairs(c.req.url), c.get("microversion"));
      const mv = c.get("microversion");
      const shape = responseShape(mv);
      const { PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: randomize, PLACEMENT_MAX_ALLOCATION_CANDIDATES: max } = deps.config;
      // Flat deployments (most clouds) are answered by one prepared statement, outside any transaction.
      if (flatEligible(query, randomize)) {
        const cap = Math.min(query.params.limit ?? Infinity, max > 0 ? max : Infinity);
        const flat = await flatCandidates(deps.db, query, Number.isFinite(cap) ? cap : undefined);
        checkNames(query, flat.names);
        if (!flat.names.hasTrees && !flat.names.hasSharing) {
          deps.metrics.candidatesReturned(flat.anchors.length);
          setLastModified(c, new Date());
          return c.body(renderFlatBody(shape, query, flat), 200, { "content-type": "application/json" });
        }
      }
      // Candidates are written as bytes as they are found (a huge answer stays off the heap).
      const body = new CandidatesBody(shape);
      // One read-only snapshot: the narrowing queries and the tree loads must agree.
      const answer = deps.db
        .transaction(
          (tx) =>
            findCandidates(tx, query, {
              nestedAware: mv.atLeast("1.29"),
              randomize,
              maxCandidates: max,
              strategy: deps.config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
              onCandidate: body.candidate,
            }),
          { isolationLevel: "repeatable read", accessMode: "read only" },
        )
        .then((result) => {
          // With randomize the engine shuffles and returns the list instead.
          for (const cand of result.candidates) body.candidate(cand, result);
          deps.metrics.candidatesReturned(body.written);
          return result;
        });
      // A large answer starts to leave once it passes a megabyte, while the engine goes on; until
      // then nothing is sent, so a bad request or a failure found early is still an ordinary error.
      const whole = answer.then(() => true);
      whole.catch(() => {}); // its failure is answered through `answer`
      const complete = await Promise.race([whole, body.whenLarge().then(() => false)]);
      setLastModified(c, new Date());
      if (complete) return c.body(body.finish(query, await answer), 200, { "content-type": "application/json" });
      const stream = body.streamUntil(query, answer, (error) =>
        deps.log.error("allocation candidates failed while streaming", { requestId: c.get("requestId"), error: error.message }),
      );
      return c.body(stream, 200, { "content-type": "application/json" });
    },
  });
  return app;
}
