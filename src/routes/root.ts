/**
 * GET /: the version document. Public: no authentication needed. Placement's
 * handler has no Accept check, so any Accept header gets the JSON document
 * (a client that asks for text/plain is still answered, not refused with 406).
 */
import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../http/context.js";
import { declareRoute } from "../http/routing.js";
import { setLastModified } from "../http/last-modified.js";
import { MAX_VERSION, MIN_VERSION } from "../http/microversion.js";

export function rootRoutes(_deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  declareRoute(app, "/", {
    GET: (c) => {
      // Placement sends the cache headers here too from 1.15; the document has no age, so "now".
      setLastModified(c, new Date());
      return c.json({
        versions: [
          {
            id: "v1.0",
            max_version: MAX_VERSION,
            min_version: MIN_VERSION,
            status: "CURRENT",
            links: [{ rel: "self", href: "" }],
          },
        ],
      });
    },
  }, { getAcceptsAnything: true });
  return app;
}
