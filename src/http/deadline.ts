/**
 * A deadline on each request's handler: past PLACEMENT_HANDLER_TIMEOUT_MS
 * the client gets a 503 instead of waiting on. The work under it goes on
 * until the database's own bounds stop it (statement_timeout, lock_timeout),
 * so a write answered this way either commits whole or not at all.
 */
import type { MiddlewareHandler } from "hono";
import type { Logger } from "../log.js";
import type { AppEnv } from "./context.js";
import { unavailable } from "./errors.js";

export function handlerDeadline(ms: number, log: Logger): MiddlewareHandler<AppEnv> {
  if (ms <= 0) return (_c, next) => next();
  return async (c, next) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        log.warn("request deadline passed", { requestId: c.get("requestId"), method: c.req.method, path: c.req.path, ms });
        reject(unavailable(`The request did not complete within ${ms} ms; retry later.`));
      }, ms);
    });
    const work = next();
    // Once the deadline answered, the handler's own end is nobody's to hear.
    work.catch(() => undefined);
    try {
      await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
    }
  };
}
