/**
 * Running the server: database selection (DATABASE_URL or embedded), migrations,
 * worker processes sharing the port, graceful shutdown.
 */
import cluster from "node:cluster";
import type { Server } from "node:http";
import { serve } from "@hono/node-server";
import { createApp } from "./app.js";
import { answerParserErrors } from "./http/client-error.js";
import type { Config } from "./config.js";
import { openDatabase, sessionLimits } from "./db/database.js";
import { rootCause, rootCauseText } from "./root-cause.js";
import { superviseWorkers, type StartupFailure } from "./supervisor.js";
import { startEmbeddedPostgres, type EmbeddedDatabase } from "./db/embedded.js";
import { runMigrations } from "./db/migrate.js";
import type { Logger } from "./log.js";
import { checkAuthStartup } from "./auth/authenticate.js";
import { createPolicyEnforcer } from "./auth/policy.js";
import { createMetrics } from "./observe/metrics.js";
import { aggregateWorkers, clusterScrapeFromWorker, reportToPrimary, serveMetricsPort } from "./observe/metrics-endpoint.js";

/** Resolves the database URL, starting the embedded PostgreSQL when none is configured. */
export async function provideDatabase(config: Config, log: Logger): Promise<{ url: string; embedded?: EmbeddedDatabase }> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL };
  const embedded = await startEmbeddedPostgres(config.PLACEMENT_DATA_DIR, config.PLACEMENT_EMBEDDED_DB_PORT, log);
  log.info("using embedded PostgreSQL", { dataDir: config.PLACEMENT_DATA_DIR, port: config.PLACEMENT_EMBEDDED_DB_PORT });
  return { url: embedded.url, embedded };
}

export async function migrateDatabase(url: string, log: Logger): Promise<void> {
  const database = openDatabase(url, 1, log);
  try {
    await runMigrations(database.pool);
  } finally {
    await database.close();
  }
}

/** Node's HTTP server options for the bounded waits of a slow client (see config.ts). */
function httpServerOptions(config: Config) {
  const requestTimeout = config.PLACEMENT_REQUEST_TIMEOUT_MS;
  return {
    // Node refuses a headers timeout longer than the whole request's.
    headersTimeout: requestTimeout > 0 ? Math.min(config.PLACEMENT_HEADERS_TIMEOUT_MS, requestTimeout) : config.PLACEMENT_HEADERS_TIMEOUT_MS,
    requestTimeout,
    keepAliveTimeout: config.PLACEMENT_KEEP_ALIVE_TIMEOUT_MS,
    // Node checks those timeouts on this interval (30 s by default): a slow client is cut near its bound.
    connectionsCheckingInterval: 500,
  };
}

/** Serves HTTP in this process; `stop` stops accepting, lets in-flight requests finish, then closes the pool. */
export async function serveHttp(config: Config, url: string, log: Logger): Promise<{ server: Server; stop: () => Promise<void> }> {
  const database = openDatabase(url, config.PLACEMENT_DB_POOL_SIZE, log, sessionLimits(config));
  const metrics = createMetrics({
    pool: database.pool,
    processMetrics: true,
    scrape: cluster.isWorker ? clusterScrapeFromWorker() : undefined,
  });
  if (cluster.isWorker) reportToPrimary(metrics.registry);
  const { app, close: closeApp } = await createApp({ db: database.db, config, log, metrics }).catch(async (err) => {
    await database.close();
    throw err;
  });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: config.PORT, hostname: config.HOST, serverOptions: httpServerOptions(config) }, () =>
      resolve(s as Server),
    );
    s.once("error", reject); // EADDRINUSE, EACCES: this process cannot serve
  }).catch(async (err) => {
    await closeApp();
    await database.close();
    throw err;
  });
  server.keepAliveTimeout = config.PLACEMENT_KEEP_ALIVE_TIMEOUT_MS;
  answerParserErrors(server);
  // A worker's metrics leave through the primary's listener.
  const metricsPort = cluster.isWorker ? undefined : await metricsListener(config, metrics.scrape, log);
  const stop = async () => {
    await metricsPort?.close();
    // close() stops accepting and waits for open connections; a keep-alive
    // connection becomes idle only once its in-flight response is sent, so keep
    // closing idle ones until the last has gone instead of waiting out the
    // keep-alive timeout.
    const closeIdle = setInterval(() => server.closeIdleConnections(), 50);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    clearInterval(closeIdle);
    await closeApp();
    await database.close();
  };
  return { server, stop };
}

/** PLACEMENT_METRICS_PORT's listener, when set. */
function metricsListener(config: Config, scrape: () => Promise<string>, log: Logger) {
  if (config.PLACEMENT_METRICS_PORT === undefined) return Promise.resolve(undefined);
  return serveMetricsPort(config.PLACEMENT_METRICS_PORT, config.PLACEMENT_METRICS_HOST ?? config.HOST, scrape, log);
}

/**
 * Runs `cleanup` once on the first SIGTERM/SIGINT, then exits 0; a second
 * signal does not wait for it: `force`, then exit 1.
 */
function onShutdownSignal(log: Logger, cleanup: () => Promise<void>, force: () => void = () => undefined): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) {
      log.warn("second signal: exiting without waiting for in-flight requests", { signal });
      force();
      process.exit(1);
    }
    stopping = true;
    log.info("shutting down", { signal });
    cleanup()
      .catch((err) => log.error("error during shutdown", { error: String(err), cause: rootCause(err) }))
      .finally(() => process.exit(0));
  };
  process.on("SIGTERM", handler);
  process.on("SIGINT", handler);
}

/** A worker: serves, or tells the primary why it cannot before failing. */
async function runWorker(config: Config, log: Logger): Promise<void> {
  try {
    const { stop } = await serveHttp(config, process.env.PLACEMENT_RESOLVED_DATABASE_URL!, log);
    onShutdownSignal(log, stop);
  } catch (err) {
    const failure: StartupFailure = { type: "startup-failed", cause: rootCauseText(err) };
    await new Promise<void>((resolve) => process.send!(failure, () => resolve()));
    throw err;
  }
}

/**
 * The primary process: prepares the database once, then runs `workers` HTTP
 * workers (or serves itself when one is enough). "placement listening" is
 * logged once the port is bound. On SIGTERM/SIGINT the workers drain, then
 * the embedded database (if started here) stops. A worker left alone by a
 * killed primary exits on its own (cluster does that on the IPC channel's
 * disconnect), so no orphan keeps serving.
 */
export async function runServer(config: Config, log: Logger): Promise<void> {
  if (cluster.isWorker) return runWorker(config, log);
  // Refuse unsafe or broken auth settings before touching the database.
  createPolicyEnforcer(config);
  checkAuthStartup(config, log);
  const { url, embedded } = await provideDatabase(config, log);
  const stopEmbedded = async () => {
    if (embedded) await embedded.stop();
  };
  try {
    await migrateDatabase(url, log);
  } catch (err) {
    await stopEmbedded();
    throw err;
  }

  if (config.PLACEMENT_WORKERS <= 1) {
    const { stop } = await serveHttp(config, url, log).catch(async (err) => {
      await stopEmbedded();
      throw err;
    });
    onShutdownSignal(log, async () => {
      await stop();
      await stopEmbedded();
    });
    log.info("placement listening", { host: config.HOST, port: config.PORT, workers: 1 });
    return;
  }

  // Workers announce themselves to the aggregation as they start.
  const metricsPort = await metricsListener(config, aggregateWorkers(), log);
  const workers = superviseWorkers(config.PLACEMENT_WORKERS, { PLACEMENT_RESOLVED_DATABASE_URL: url }, log);
  onShutdownSignal(
    log,
    async () => {
      await workers.stop();
      await metricsPort?.close();
      await stopEmbedded();
    },
    () => workers.kill(),
  );
  try {
    await workers.up;
  } catch (err) {
    await stopEmbedded();
    throw err;
  }
  log.info("placement listening", { host: config.HOST, port: config.PORT, workers: config.PLACEMENT_WORKERS });
  // Once up, the same rule holds: every worker gone and none able to start again.
  void workers.failed.then(async (err) => {
    log.error("placement cannot serve: workers keep failing to start", { cause: err.message });
    await stopEmbedded().catch(() => undefined);
    process.exit(1);
  });
}
