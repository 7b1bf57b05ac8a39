/**
 * GET /healthcheck as oslo.middleware's healthcheck answers it (not
 * detailed): 200 "OK", or 503 with the reason; HEAD 204 or 503 with no body;
 * JSON {"detailed": false, "reasons": [...]} when asked for. No
 * authentication, no microversion. The database check is one `SELECT 1` on
 * the pool, shared by every probe within `cacheMs`, so a probe loop costs
 * the database one query per period whatever its rate, and no connections of
 * its own.
 */
import { sql } from "drizzle-orm";
import type { Handler } from "hono";
import type { Db } from "../db/database.js";
import { bestMatch } from "../http/accept.js";
import type { AppEnv } from "../http/context.js";
import { rootCause } from "../root-cause.js";

export interface HealthResult {
  healthy: boolean;
  reason: string;
}

export interface HealthcheckOptions {
  cacheMs?: number;
  /** Past this the check counts as failed (a database that accepts connections but does not answer). */
  timeoutMs?: number;
}

/** A reason an operator can act on, without addresses or credentials. */
function failureReason(err: unknown): string {
  const { code } = rootCause(err);
  if (code && /^[0-9A-Z]{5}$/.test(code)) return `database error (SQLSTATE ${code})`;
  if (code) return `database unreachable (${code})`;
  return "database unreachable";
}

export function databaseCheck(db: Db, options: HealthcheckOptions = {}): () => Promise<HealthResult> {
  const cacheMs = options.cacheMs ?? 1_500;
  const timeoutMs = options.timeoutMs ?? 3_000;
  let last: { at: number; result: Promise<HealthResult> } | undefined;
  const probe = async (): Promise<HealthResult> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<HealthResult>((resolve) => {
      timer = setTimeout(() => resolve({ healthy: false, reason: "database check timed out" }), timeoutMs);
    });
    const query = db.execute(sql`SELECT 1`).then(
      (): HealthResult => ({ healthy: true, reason: "OK" }),
      (err: unknown): HealthResult => ({ healthy: false, reason: failureReason(err) }),
    );
    try {
      return await Promise.race([query, timeout]);
    } finally {
      clearTimeout(timer);
    }
  };
  return () => {
    const now = Date.now();
    // A check still running is shared too: probes never queue queries.
    if (!last || now - last.at >= cacheMs) last = { at: now, result: probe() };
    return last.result;
  };
}

export function healthcheckHandler(check: () => Promise<HealthResult>): Handler<AppEnv> {
  return async (c) => {
    const { healthy, reason } = await check();
    if (c.req.method === "HEAD") return c.body(null, healthy ? 204 : 503, { "content-type": "text/plain; charset=UTF-8" });
    const status = healthy ? 200 : 503;
    if (bestMatch(c.req.header("accept"), ["text/plain", "application/json"]) === "application/json") {
      return c.body(JSON.stringify({ detailed: false, reasons: [reason] }, null, 4), status, { "content-type": "application/json" });
    }
    return c.body(reason, status, { "content-type": "text/plain; charset=UTF-8" });
  };
}
