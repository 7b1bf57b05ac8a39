/**
 * Route declaration in Placement's style: each path lists the methods it
 * serves, and any other method gets 405 with an Allow header naming them.
 */
import type { Handler, Hono } from "hono";
import type { AppEnv } from "./context.js";
import { notAcceptable, PlacementError } from "./errors.js";
import { acceptsJson } from "./middleware.js";
import type { VersionString } from "./microversion.js";
import type { AppContext } from "./context.js";

type Method = "GET" | "PUT" | "POST" | "DELETE" | "PATCH";

export function methodNotAllowed(method: string, allowed: string[]): PlacementError {
  return new PlacementError(
    405,
    "The method specified is not allowed for this resource.",
    undefined,
    { allow: allowed.join(", ") },
    `The method ${method} is not allowed for this resource.`,
  );
}

export interface RouteOptions {
  /** The GET answers no body (e.g. 204 on /traits/{name}), so any Accept header will do. */
  getAcceptsAnything?: boolean;
  /**
   * The GET exists from this microversion: an older request is a 404 before
   * any Accept check (Placement's version_handler wraps its check_accept).
   */
  getSince?: VersionString;
}

/** Registers `handlers` on `path` plus the 405 fallback for every other method. */
export function declareRoute<P extends string>(
  app: Hono<AppEnv>,
  path: P,
  handlers: Partial<Record<Method, Handler<AppEnv, P>>>,
  options: RouteOptions = {},
): void {
  const methods = Object.keys(handlers) as Method[];
  for (const method of methods) {
    const handler = handlers[method]!;
    app.on(method, path, method === "GET" ? guardGet(handler, methods, options) : handler);
  }
  app.all(path, (c) => {
    throw methodNotAllowed(c.req.method, methods);
  });
}

/**
 * Hono answers HEAD with the GET handler; Placement does not serve HEAD, so it
 * gets the 405 like any other undeclared method. GET responses are JSON only:
 * an Accept header that rules JSON out is a 406 (Placement's check_accept).
 */
function guardGet<P extends string>(handler: Handler<AppEnv, P>, methods: Method[], options: RouteOptions): Handler<AppEnv, P> {
  return (c, next) => {
    if (c.req.method === "HEAD") throw methodNotAllowed("HEAD", methods);
    if (options.getSince) requireMicroversion(c, options.getSince);
    const accept = c.req.header("accept");
    if (!options.getAcceptsAnything && !acceptsJson(accept)) throw notAcceptable("Only application/json is provided", accept);
    return handler(c, next);
  };
}

/**
 * Guards a handler that exists only from microversion `since`: older requests
 * get 404 (a route that does not exist yet) or 405 (a method that does not).
 */
export function requireMicroversion(c: AppContext, since: VersionString, status: 404 | 405 = 404): void {
  if (c.get("microversion").atLeast(since)) return;
  // Placement's version_handler raises a bare 405: no Allow header, no message.
  if (status === 405) throw new PlacementError(405, "", undefined, {}, `The method ${c.req.method} is not allowed for this resource.`);
  throw new PlacementError(404, "");
}

