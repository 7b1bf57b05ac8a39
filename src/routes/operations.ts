/** GET /metrics on the API port (PLACEMENT_METRICS_ON_API_PORT): authenticated, admin or service only. */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { declareRoute } from "../http/routing.js";
import { METRICS_CONTENT_TYPE } from "../observe/metrics.js";

export function operationsRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  if (!deps.config.PLACEMENT_METRICS_ON_API_PORT) return app;
  declareRoute(
    app,
    "/metrics",
    {
      GET: async (c) => {
        authorize(c, "admin_or_service_api");
        return c.body(await deps.metrics.scrape(), 200, { "content-type": METRICS_CONTENT_TYPE });
      },
    },
    { getAcceptsAnything: true },
  );
  return app;
}
