/** GET /resource_providers/{uuid}/usages and GET /usages (1.9; grouped by consumer type from 1.38). */
import { Hono } from "hono";
import { z } from "zod";
import { queryPairs, validateQuery } from "../query/query-string.js";
import { authorize } from "../auth/policy.js";
import type { AppContext, AppDeps, AppEnv } from "../http/context.js";
import { setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { getProviderUsages, getTotalUsages, getUsagesByConsumerType } from "../services/usages.js";

const EXTERNAL_ID = z.string().min(1).max(255);

/** GET /usages query, 1.9. */
export const USAGES_QUERY_V1_9 = z.strictObject({ project_id: EXTERNAL_ID, user_id: EXTERNAL_ID.optional() });

/** 1.38: consumer_type filter; "all" and "unknown" are the two lower-case words allowed besides type names. */
export const USAGES_QUERY_V1_38 = USAGES_QUERY_V1_9.extend({
  consumer_type: z
    .string()
    .regex(/^[A-Z0-9_]+$|^all|^unknown$/)
    .min(1)
    .max(255)
    .optional(),
});

/**
 * Validates the query string in Placement's words, on the last value of each
 * key (webob's dict(req.GET)): a repeated project_id counts by its last value.
 */
function parseQuery<S extends z.ZodType>(c: AppContext, schema: S): z.output<S> {
  return validateQuery(schema, queryPairs(c.req.url));
}

export function usageRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  declareRoute(app, "/resource_providers/:uuid/usages", {
    GET: async (c) => {
      authorize(c, "placement:resource_providers:usages");
      const { provider, usages } = await getProviderUsages(deps.db, c.req.param("uuid"));
      // Usage is a question about now, so Last-Modified is now (Placement's reasoning too).
      setLastModified(c, new Date());
      return c.json({ resource_provider_generation: provider.generation, usages });
    },
  });

  declareRoute(app, "/usages", {
    GET: async (c) => {
      requireMicroversion(c, "1.9");
      // The rule may compare the caller's project with the one asked about.
      // A repeated project_id counts by its last value everywhere, as webob's req.GET.get gives it.
      authorize(c, "placement:usages", { project_id: c.req.queries("project_id")?.at(-1) ?? null });
      const byType = c.get("microversion").atLeast("1.38");
      const query = parseQuery(c, byType ? USAGES_QUERY_V1_38 : USAGES_QUERY_V1_9) as {
        project_id: string;
        user_id?: string;
        consumer_type?: string;
      };
      const filter = { projectId: query.project_id, userId: query.user_id };
      const usages = byType ? await getUsagesByConsumerType(deps.db, filter, query.consumer_type) : await getTotalUsages(deps.db, filter);
      setLastModified(c, new Date());
      return c.json({ usages });
    },
  });

  return app;
}
