/** Routes for resource-providers: not written yet (placeholder so the app composes; see the open issues). */
import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../http/context.js";

export function resourceProviderRoutes(_deps: AppDeps): Hono<AppEnv> {
  return new Hono<AppEnv>();
}
