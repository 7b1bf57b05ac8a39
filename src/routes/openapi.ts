/** GET /openapi.json: the OpenAPI 3.1 document (public, like GET /). */
import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../http/context.js";
import { declareRoute } from "../http/routing.js";
import { buildOpenApiDocument } from "../openapi/document.js";

export function openApiRoutes(_deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Built when the app is: it depends only on the code.
  const text = JSON.stringify(buildOpenApiDocument());
  declareRoute(app, "/openapi.json", {
    GET: (c) => c.body(text, 200, { "content-type": "application/json" }),
  });
  return app;
}
