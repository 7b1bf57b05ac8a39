/**
 * Middleware shared by every route, in Placement's order: request id, CORS,
 * authentication, microversion, then per-request checks of headers.
 */
import { randomUUID } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import type { AppEnv } from "./context.js";
import { PlacementError } from "./errors.js";
import { HEADER, parseMicroversion } from "./microversion.js";
import { pastHandler } from "./vary.js";
import { createAuthenticator } from "../auth/authenticate.js";

const REQUEST_ID_HEADER = "x-openstack-request-id";
const VALID_REQUEST_ID = /^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/;

/** Every response carries a request id; a well-formed inbound one is kept so calls can be traced across services. */
export const requestId: MiddlewareHandler<AppEnv> = async (c, next) => {
  const inbound = c.req.header(REQUEST_ID_HEADER);
  const valid = inbound !== undefined && VALID_REQUEST_ID.test(inbound);
  const id = valid ? inbound : `req-${randomUUID()}`;
  c.set("requestId", id);
  if (valid) c.set("globalRequestId", inbound);
  await next();
  c.res.headers.set(REQUEST_ID_HEADER, id);
};

/**
 * CORS only when origins are configured (as oslo.middleware's CORS filter in
 * Placement); otherwise OPTIONS falls through to the 405 of each route.
 * A preflight (OPTIONS) is always answered 200 here, with the allow headers
 * only when the origin, method and requested headers are all permitted.
 */
export function corsMiddleware(config: Config): MiddlewareHandler<AppEnv> | undefined {
  const origins = config.PLACEMENT_CORS_ALLOWED_ORIGINS;
  if (!origins || origins.length === 0) return undefined;
  const allowHeaders = new Set([...(config.PLACEMENT_CORS_ALLOW_HEADERS ?? []), ...CORS_SIMPLE_HEADERS].map((h) => h.toLowerCase()));
  const allowedOrigin = (origin: string | undefined): string | undefined => {
    if (!origin) return undefined;
    if (origins.includes(origin)) return origin;
    return origins.includes("*") ? "*" : undefined;
  };
  return async (c, next) => {
    const origin = allowedOrigin(c.req.header("origin"));
    if (c.req.method === "OPTIONS") {
      const headers: Record<string, string> = {};
      const method = c.req.header("access-control-request-method");
      const requested = (c.req.header("access-control-request-headers") ?? "")
        .split(",")
        .map((h) => h.trim())
        .filter((h) => h.length > 0);
      if (origin && method && CORS_METHODS.includes(method) && requested.every((h) => allowHeaders.has(h.toLowerCase()))) {
        headers.vary = "Origin";
        headers["access-control-allow-origin"] = origin;
        headers["access-control-allow-methods"] = method;
        if (requested.length > 0) headers["access-control-allow-headers"] = requested.join(",");
      }
      return c.body(null, 200, headers);
    }
    await next();
    if (origin && !c.res.headers.has("access-control-allow-origin")) {
      const vary = c.res.headers.get("vary");
      c.res.headers.set("vary", vary ? `${vary},Origin` : "Origin");
      c.res.headers.set("access-control-allow-origin", origin);
      c.res.headers.set("access-control-expose-headers", CORS_EXPOSE_HEADERS.join(","));
    }
  };
}

const CORS_METHODS = ["GET", "PUT", "POST", "DELETE", "PATCH"];
/** Headers a browser may always send (the CORS "simple" request headers). */
const CORS_SIMPLE_HEADERS = ["Cache-Control", "Content-Language", "Content-Type", "Expires", "Last-Modified", "Pragma"];
const CORS_EXPOSE_HEADERS = [HEADER, REQUEST_ID_HEADER];

/**
 * 413 past PLACEMENT_MAX_BODY_BYTES. Not for GET and HEAD, whose bodies no
 * route reads. A body whose length is declared (Content-Length, not chunked)
 * is judged by that number here, as hono's check would; only a chunked body
 * goes through hono's check, which counts it as it streams. hono's check
 * first builds a full Request object (a web stream over the socket and an
 * AbortSignal) to look for a body, garbage on every write, where a route
 * reads a declared body straight from the socket.
 */
export function bodySizeLimit(config: Config): MiddlewareHandler<AppEnv> {
  const maxSize = config.PLACEMENT_MAX_BODY_BYTES;
  const tooLarge = () => new PlacementError(413, `Request body is larger than ${maxSize} bytes.`);
  const limit = bodyLimit({
    maxSize,
    onError: () => {
      throw tooLarge();
    },
  });
  return (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const length = c.req.header("content-length");
    if (length === undefined || c.req.header("transfer-encoding") !== undefined) return limit(c, next);
    if (Number.parseInt(length, 10) > maxSize) throw tooLarge();
    return next();
  };
}

/**
 * The root document is public, as in Placement, and so is the OpenAPI
 * document (it says no more than the root and the published API reference
 * do); everything else needs an identity.
 */
const PUBLIC_PATHS = new Set(["/", "/openapi.json"]);

export function authMiddleware(config: Config, log: Logger): MiddlewareHandler<AppEnv> {
  const authenticate = createAuthenticator(config, log);
  return async (c, next) => {
    if (!PUBLIC_PATHS.has(c.req.path)) c.set("identity", await authenticate(c));
    await next();
  };
}

/** Negotiates the microversion and echoes it, with Vary, on every response including errors. */
export const microversion: MiddlewareHandler<AppEnv> = async (c, next) => {
  const version = parseMicroversion(c.req.header(HEADER), c.req.header("accept"));
  c.set("microversion", version);
  await next();
  c.res.headers.set(HEADER, `placement ${version.toString()}`);
  // An error response got its Vary (or, for one Placement raises past its handlers, none) in app.onError.
  if (c.error) return;
  const vary = c.res.headers.get("vary");
  if (!vary?.toLowerCase().includes(HEADER)) c.res.headers.set("vary", vary ? `${vary}, ${HEADER}` : HEADER);
};

/**
 * Header checks Placement makes before dispatch: a body needs a content type.
 * (The Accept check of GET happens once a route matched, see declareRoute: an
 * unknown path is a 404 whatever the Accept header says.)
 */
export const headerChecks: MiddlewareHandler<AppEnv> = async (c, next) => {
  const length = c.req.header("content-length");
  if (length !== undefined) {
    if (!/^\d+$/.test(length.trim())) throw pastHandler(new PlacementError(400, "content-length header must be an integer"));
    if (Number(length) > 0 && !c.req.header("content-type")) {
      throw pastHandler(new PlacementError(400, "content-type header required when content-length > 0"));
    }
  }
  await next();
};

export { acceptsJson, bestMatch } from "./accept.js";
