/**
 * One record per request, made when the response has left (a streamed
 * candidates answer leaves after its handler returned): who asked, what,
 * the answer's status and size, how long it took. The request log and the
 * metrics are listeners; neither sees bodies or headers beyond these facts.
 */
import { performance } from "node:perf_hooks";
import type { MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import type { AppContext, AppEnv } from "../http/context.js";
import { nodeBindings, peerAddress } from "../http/node-bindings.js";

export interface RequestRecord {
  remoteAddress: string | null;
  method: string;
  /** Path and query as the client sent them. */
  path: string;
  /** The route template that answered ("/resource_providers/:uuid"), "unmatched" when none did: bounded, for metric labels. */
  route: string;
  status: number;
  /** Body bytes sent; null when unknown (no socket and no content-length). */
  bytes: number | null;
  microversion: string | null;
  requestId: string | null;
  globalRequestId: string | null;
  userId: string | null;
  projectId: string | null;
  durationMs: number;
  /** The client went away before the whole response was sent. */
  aborted: boolean;
}

export type RequestListener = (record: RequestRecord) => void;

const UNMATCHED = "unmatched";

function routeTemplate(c: AppContext): string {
  // Middleware is registered on "/*"; the first other path is the route's own.
  for (const route of matchedRoutes(c)) if (route.path !== "/*" && route.path !== "*") return route.path;
  return UNMATCHED;
}

function byteLength(chunk: unknown, encoding?: unknown): number {
  if (typeof chunk === "string") return Buffer.byteLength(chunk, typeof encoding === "string" ? (encoding as BufferEncoding) : "utf8");
  if (chunk instanceof Uint8Array) return chunk.byteLength;
  return 0;
}

export function observeRequests(listeners: RequestListener[], onListenerError: (err: unknown) => void): MiddlewareHandler<AppEnv> {
  const emit = (record: RequestRecord) => {
    for (const listener of listeners) {
      try {
        listener(record);
      } catch (err) {
        onListenerError(err);
      }
    }
  };
  return async (c, next) => {
    const started = performance.now();
    const { incoming, outgoing } = nodeBindings(c);
    let bytes = 0;
    if (outgoing) {
      // Counting what is written is the one way to know a streamed body's size.
      const write = outgoing.write;
      const end = outgoing.end;
      outgoing.write = function (this: typeof outgoing, chunk: unknown, ...rest: unknown[]) {
        bytes += byteLength(chunk, rest[0]);
        return (write as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
      } as typeof outgoing.write;
      outgoing.end = function (this: typeof outgoing, chunk?: unknown, ...rest: unknown[]) {
        if (typeof chunk !== "function") bytes += byteLength(chunk, rest[0]);
        return (end as (...a: unknown[]) => typeof outgoing).call(this, chunk, ...rest);
      } as typeof outgoing.end;
    }
    const record = (status: number, sent: number | null, aborted: boolean): RequestRecord => {
      const identity = c.get("identity");
      return {
        remoteAddress: peerAddress(c) ?? null,
        method: c.req.method,
        path: incoming?.url ?? new URL(c.req.url).pathname + new URL(c.req.url).search,
        route: routeTemplate(c),
        status,
        bytes: sent,
        microversion: c.get("microversion")?.toString() ?? null,
        requestId: c.get("requestId") ?? null,
        globalRequestId: c.get("globalRequestId") ?? null,
        userId: identity?.userId ?? null,
        projectId: identity?.projectId ?? null,
        durationMs: performance.now() - started,
        aborted,
      };
    };
    await next();
    if (outgoing) {
      outgoing.once("close", () => emit(record(outgoing.statusCode, bytes, !outgoing.writableFinished)));
    } else {
      const length = c.res.headers.get("content-length");
      emit(record(c.res.status, length === null ? null : Number(length), false));
    }
  };
}
