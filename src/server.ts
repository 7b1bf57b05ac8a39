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
import { openDatabase } from "./db/database.js";
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

/** Serves HTTP in this process; `stop` stops accepting, lets in-flight requests finish, then closes the pool. */
export async function serveHttp(config: Config, url: string, log: Logger): Promise<{ server: Server; stop: () => Promise<void> }> {
  const database = openDatabase(url, config.PLACEMENT_DB_POOL_SIZE, log);
  const metrics = createMetrics({
    pool: database.pool,
    processMetrics: true,
    scrape: cluster.isWorker ? clusterScrapeFromWorker() : undefined,
  });
  if (cluster.isWorker) reportToPrimary(metrics.registry);
  const app = createApp({ db: database.db, config, log, metrics });
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, port: config.PORT, hostname: config.HOST }, () => resolve(s as Server));
  });
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
    await database.close();
  };
  return { server, stop };
}

/** PLACEMENT_METRICS_PORT's listener, when set. */
function metricsListener(config: Config, scrape: () => Promise<string>, log: Logger) {
  if (config.PLACEMENT_METRICS_PORT === undefined) return Promise.resolve(undefined);
  return serveMetricsPort(config.PLACEMENT_METRICS_PORT, config.PLACEMENT_METRICS_HOST ?? config.HOST, scrape, log);
}

/** Runs `cleanup` once on the first SIGTERM/SIGINT, then exits. */
function onShutdownSignal(log: Logger, cleanup: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    cleanup()
      .catch((err) => log.error("error during shutdown", { error: String(err) }))
      .finally(() => process.exit(0));
  };
  process.on("SIGTERM", handler);
  process.on("SIGINT", handler);
}

/**
 * The primary process: prepares the database once, then runs `workers` HTTP
 * workers (or serves itself when one is enough). On SIGTERM/SIGINT the
 * workers drain, then the embedded database (if started here) stops.
 */
export async function runServer(config: Config, log: Logger): Promise<void> {
  if (cluster.isWorker) {
    const { stop } = await serveHttp(config, process.env.PLACEMENT_RESOLVED_DATABASE_URL!, log);
    onShutdownSignal(log, stop);
    return;
  }
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
    const { stop } = await serveHttp(config, url, log);
    onShutdownSignal(log, async () => {
      await stop();
      await stopEmbedded();
    });
    log.info("placement listening", { host: config.HOST, port: config.PORT, workers: 1 });
    return;
  }

  const metricsPort = await metricsListener(config, aggregateWorkers(), log);
  let stopping = false;
  const fork = () => cluster.fork({ PLACEMENT_RESOLVED_DATABASE_URL: url });
  for (let i = 0; i < config.PLACEMENT_WORKERS; i++) fork();
  cluster.on("exit", (worker, code) => {
    if (stopping) return;
    log.warn("worker exited; starting another", { pid: worker.process.pid, code });
    fork();
  });
  onShutdownSignal(log, async () => {
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve) => {
            w.once("exit", () => resolve());
            w.process.kill("SIGTERM");
          }),
      ),
    );
    await metricsPort?.close();
    await stopEmbedded();
  });
  log.info("placement listening", { host: config.HOST, port: config.PORT, workers: config.PLACEMENT_WORKERS });
}
