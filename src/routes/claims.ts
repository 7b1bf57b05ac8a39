/**
 * POST /claims?<allocation candidates query>: select and claim (an
 * extension; see src/services/claims.ts for how it answers and locks).
 * The query string is GET /allocation_candidates' at the request's
 * microversion, through the same parser; the body says who claims and how
 * to choose.
 */
import { Hono } from "hono";
import { readJsonBody } from "../http/body.js";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { badRequest } from "../http/errors.js";
import { declareRoute } from "../http/routing.js";
import { POST_CLAIMS } from "../schemas/claims.js";
import { answerShape } from "../services/candidates/answer-shape.js";
import { claimWhileReading, type ClaimChoice } from "../services/claims.js";
import { candidatesRequest } from "./candidates-request.js";

export function claimRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  declareRoute(app, "/claims", {
    POST: async (c) => {
      const { mv, query } = candidatesRequest(c, "placement:claims:create");
      // Read while the first answer is (claimWhileReading); its errors come first.
      const choice = readJsonBody(c, POST_CLAIMS.at(mv)).then((body): ClaimChoice => {
        const uuids = body.consumers.map((x) => x.consumer_uuid);
        const repeated = uuids.find((u, i) => uuids.indexOf(u) !== i);
        if (repeated) throw badRequest(`Consumer ${repeated} is named more than once.`);
        return {
          consumers: body.consumers.map((x) => ({
            consumerUuid: x.consumer_uuid,
            projectId: x.project_id,
            userId: x.user_id,
            // As PUT /allocations: the type is stored from 1.38.
            consumerType: mv.atLeast("1.38") ? x.consumer_type : undefined,
          })),
          pick: body.pick,
          alternates: body.alternates,
          allOrNothing: body.all_or_nothing,
        };
      });
      const outcome = await claimWhileReading(deps.store, deps.services.candidates, { query, shape: answerShape(mv) }, choice);
      const mappings = mv.atLeast("1.34");
      return c.json({
        claims: outcome.claims.map((x) => ({ consumer_uuid: x.consumerUuid, allocations: x.allocations, consumer_generation: x.consumerGeneration })),
        unplaced: outcome.unplaced,
        alternates: outcome.alternates.map((a) => ({
          allocations: Object.fromEntries(Object.entries(a.allocations).map(([rp, resources]) => [rp, { resources }])),
          ...(mappings ? { mappings: a.mappings } : {}),
        })),
      });
    },
  });
  return app;
}
