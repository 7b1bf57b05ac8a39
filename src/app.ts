/**
 * The composition root: builds the Hono app from what it is given. The CLI's
 * `serve` and every test call this same factory with their own pool.
 */
import { Hono } from "hono";
import type { AppDeps, AppEnv } from "./http/context.js";
import { errorBody, PlacementError, statusTitle } from "./http/errors.js";
import { authMiddleware, bestMatch, bodySizeLimit, corsMiddleware, headerChecks, microversion, requestId } from "./http/middleware.js";
import { createPolicyEnforcer } from "./auth/policy.js";
import { rootRoutes } from "./routes/root.js";
import { resourceProviderRoutes } from "./routes/resource-providers.js";
import { inventoryRoutes } from "./routes/inventories.js";
import { aggregateRoutes } from "./routes/aggregates.js";
import { resourceClassRoutes } from "./routes/resource-classes.js";
import { traitRoutes } from "./routes/traits.js";
import { allocationRoutes } from "./routes/allocations.js";
import { usageRoutes } from "./routes/usages.js";
import { reshaperRoutes } from "./routes/reshaper.js";
import { allocationCandidateRoutes } from "./routes/allocation-candidates.js";

export function createApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const policy = createPolicyEnforcer(deps.config);

  app.use(requestId);
  const cors = corsMiddleware(deps.config);
  if (cors) app.use(cors);
  app.use(async (c, next) => {
    c.set("policy", policy);
    await next();
  });
  app.use(authMiddleware(deps.config));
  app.use(microversion);
  app.use(headerChecks);
  app.use(bodySizeLimit(deps.config));

  for (const routes of [
    rootRoutes,
    resourceProviderRoutes,
    inventoryRoutes,
    aggregateRoutes,
    resourceClassRoutes,
    traitRoutes,
    allocationRoutes,
    usageRoutes,
    reshaperRoutes,
    allocationCandidateRoutes,
  ]) {
    app.route("/", routes(deps));
  }

  app.notFound(() => {
    throw new PlacementError(404, "");
  });

  app.onError((err, c) => {
    const placementError =
      err instanceof PlacementError ? err : internalError(err, deps, c.get("requestId"), c.req.method, c.req.path);
    const version = c.get("microversion");
    const includeCode = version ? version.atLeast("1.23") : false;
    const body = errorBody(placementError, c.get("requestId"), includeCode);
    const headers: Record<string, string> = { ...placementError.headers };
    if (version) {
      headers["openstack-api-version"] = `placement ${version.toString()}`;
      headers["vary"] = "openstack-api-version";
    }
    // Like Placement (webob), errors follow the Accept header: HTML for a browser, JSON otherwise.
    if (bestMatch(c.req.header("accept"), ["application/json", "text/html"]) === "text/html") {
      const e = body.errors[0];
      return c.html(
        `<html>\n <head>\n  <title>${e.status} ${escapeHtml(e.title)}</title>\n </head>\n <body>\n  <h1>${e.status} ${escapeHtml(e.title)}</h1>\n  ${escapeHtml(e.detail)}\n </body>\n</html>`,
        placementError.status as 400,
        headers,
      );
    }
    return c.json(body, placementError.status as 400, headers);
  });

  return app;
}

/** Logs an unexpected failure in full and gives the client nothing internal. */
function internalError(err: Error, deps: AppDeps, requestId: string | undefined, method: string, path: string): PlacementError {
  deps.log.error("unhandled error", { requestId, method, path, error: err.message, stack: err.stack });
  return new PlacementError(500, `An unexpected error occurred (request ${requestId ?? "unknown"}).`);
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export { statusTitle };
