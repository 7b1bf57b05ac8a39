/** GET /metrics on the API port (PLACEMENT_METRICS_ON_API_PORT): authenticated, admin or service only. */
import { Hono } from "hono";
import { PlacementError } from "../http/errors.js";
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
        // Not an API of Placement's, so no policy rule of its own: the admin_or_service_api roles.
        const roles = c.get("identity").roles.map((r) => r.toLowerCase());
        if (!roles.includes("admin") && !roles.includes("service")) throw new PlacementError(403, "Only admin or service callers may read metrics.");
        return c.body(await deps.metrics.scrape(), 200, { "content-type": METRICS_CONTENT_TYPE });
      },
    },
    { getAcceptsAnything: true },
  );
  return app;
}
