/** GET /resource_providers/{uuid}/usages and GET /usages (1.9; grouped by consumer type from 1.38). */
import { Hono } from "hono";
import { queryPairs, validateQuery } from "../query/query-string.js";
import { authorize } from "../auth/policy.js";
import type { AppDeps, AppEnv } from "../http/context.js";
import { setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { USAGES_QUERY } from "../schemas/usages.js";
import { getProviderUsages, getTotalUsages, getUsagesByConsumerType } from "../services/usages.js";

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
      // The last value of each key counts (webob's dict(req.GET)), as for the policy check above.
      const mv = c.get("microversion");
      const query = validateQuery(USAGES_QUERY.at(mv), queryPairs(c.req.url));
      const filter = { projectId: query.project_id, userId: query.user_id };
      const usages = mv.atLeast("1.38")
        ? await getUsagesByConsumerType(deps.db, filter, "consumer_type" in query ? query.consumer_type : undefined)
        : await getTotalUsages(deps.db, filter);
      setLastModified(c, new Date());
      return c.json({ usages });
    },
  });

  return app;
}
