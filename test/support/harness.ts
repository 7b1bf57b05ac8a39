/**
 * The test harness: the real app (createApp) over a real PostgreSQL database of
 * its own, driven through app.request() with Placement's usual headers.
 *
 *   const t = await startHarness();          // in beforeAll
 *   const res = await t.request("POST", "/resource_providers", { body: {...} });
 *   await t.close();                          // in afterAll
 */
import { randomUUID } from "node:crypto";
import type { Hono } from "hono";
import { createApp } from "../../src/app.js";
import { testConfig, type Config } from "../../src/config.js";
import { openDatabase, sessionLimits, type Database } from "../../src/db/database.js";
import type { AppEnv } from "../../src/http/context.js";
import { createLogger } from "../../src/log.js";
import { createMetrics, type Metrics } from "../../src/observe/metrics.js";
import type { CandidatesServiceOptions } from "../../src/services/candidates/service.js";
import { createTestDatabase, type TestDatabase } from "./database.js";

export interface RequestOptions {
  /** Microversion to ask for; default "latest". Pass null to send no version header. */
  version?: string | null;
  /** JSON body (serialised) or a raw string. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Token for noauth2; default "admin". Pass null to send none. */
  token?: string | null;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export interface Harness {
  app: Hono<AppEnv>;
  database: Database;
  url: string;
  config: Config;
  /** The app's metrics registry (its counters move with the requests made through `request`). */
  metrics: Metrics;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /**
   * Requests to another app over the same database, built with other
   * candidates options (tests forcing each candidates path in turn).
   */
  requestVia(candidates: CandidatesServiceOptions): Harness["request"];
  /** Runs SQL straight against the test database (for invariant checks). */
  sql<T = any>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export async function startHarness(
  options: {
    config?: Partial<Config>;
    poolSize?: number;
    /** The URL the app connects to for its database's direct URL (a pooler in front of it, say); `url` stays the direct one. */
    via?: (url: string) => string;
  } = {},
): Promise<Harness> {
  const testDb: TestDatabase = await createTestDatabase();
  const config = testConfig({ DATABASE_URL: testDb.url, ...options.config });
  const log = createLogger("silent");
  // Small by default: two test files run at once against one PostgreSQL
  // (max_connections 100 by default); race tests ask for the clients they race.
  const database = openDatabase(options.via?.(testDb.url) ?? testDb.url, options.poolSize ?? 10, log, sessionLimits(config));
  const metrics = createMetrics();
  const { app, close: closeApp } = await createApp({ db: database.db, config, log, metrics });
  const others: Array<() => Promise<void>> = [];

  const requester = (app: Hono<AppEnv>) => async (method: string, path: string, opts: RequestOptions = {}): Promise<TestResponse> => {
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.token !== null) headers["x-auth-token"] = opts.token ?? "admin";
    if (opts.version !== null) headers["openstack-api-version"] = `placement ${opts.version ?? "latest"}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      headers["content-type"] = "application/json";
    }
    Object.assign(headers, opts.headers);
    const res = await app.request(path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
  const request = requester(app);

  return {
    app,
    database,
    url: testDb.url,
    config,
    metrics,
    request,
    requestVia: (candidates) => {
      const other = createApp({ db: database.db, config, log, candidates });
      others.push(async () => (await other).close());
      return async (...args) => requester((await other).app)(...args);
    },
    sql: async (text, params) => (await database.pool.query(text, params as unknown[])).rows,
    close: async () => {
      for (const close of [closeApp, ...others]) await close();
      await database.close();
      await testDb.drop();
    },
  };
}

export const newUuid = (): string => randomUUID();
