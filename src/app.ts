/**
 * The composition root: builds the Hono app from what it is given, and every
 * service that keeps state for the app's lifetime (AppServices), which no
 * route or module keeps on its own: the read replicas the configuration
 * names (PLACEMENT_READ_DATABASE_URL) among them, opened here and closed by
 * the app's close(). The CLI's `serve` and every test call this same factory
 * with their own pool, and call its close() before closing that pool. The
 * pool and the metrics registry are given, so their owner closes them.
 */
import { Hono } from "hono";
import type { AppDeps, AppEnv, AppServices, RouteDeps } from "./http/context.js";
import { PlacementError, renderError } from "./http/errors.js";
import { placementErrorFor } from "./http/error-table.js";
import { handlerDeadline } from "./http/deadline.js";
import { rootCause } from "./root-cause.js";
import { authMiddleware, bodySizeLimit, corsMiddleware, headerChecks, microversion, requestId } from "./http/middleware.js";
import { createPolicyEnforcer } from "./auth/policy.js";
import { observeRequests } from "./observe/requests.js";
import { createMetrics } from "./observe/metrics.js";
import { conflictKind } from "./observe/conflict-kind.js";
import { operationsRoutes } from "./routes/operations.js";
import { databaseCheck, healthcheckHandler } from "./observe/healthcheck.js";
import { perTransactionLimits, poolOf, sessionLimits, urlOf, type Db } from "./db/database.js";
import { ReadReplicas } from "./db/read-replicas.js";
import type { Config } from "./config.js";
import type { Logger } from "./log.js";
import { requestLogger } from "./observe/request-log.js";
import { sqlState } from "./db/sql-state.js";
import { pastHandler, variesByMicroversion } from "./http/vary.js";
import { rootRoutes } from "./routes/root.js";
import { openApiRoutes } from "./routes/openapi.js";
import { resourceProviderRoutes } from "./routes/resource-providers.js";
import { inventoryRoutes } from "./routes/inventories.js";
import { aggregateRoutes } from "./routes/aggregates.js";
import { resourceClassRoutes } from "./routes/resource-classes.js";
import { traitRoutes } from "./routes/traits.js";
import { allocationRoutes } from "./routes/allocations.js";
import { usageRoutes } from "./routes/usages.js";
import { reshaperRoutes } from "./routes/reshaper.js";
import { allocationCandidateRoutes } from "./routes/allocation-candidates.js";
import { changeRoutes } from "./routes/changes.js";
import { claimRoutes } from "./routes/claims.js";
import { explainRoutes } from "./routes/explain.js";
import { CandidatesService } from "./services/candidates/service.js";
import { ReplicaRoutedCandidates } from "./services/replica-candidates.js";
import { ChangeNotifier } from "./services/changes-notifier.js";
import { AnswerBudget } from "./render/candidates/budget.js";
import { RenderCache } from "./render/candidates/cache.js";
import { watchReplicas } from "./observe/replica-metrics.js";

/** The app, the services it built, and the one close() that releases what they hold. */
export interface PlacementApp {
  app: Hono<AppEnv>;
  services: AppServices;
  /** Releases what the services hold (the change feed's LISTEN connection, the read replicas' pools, the render cache); call it before closing the pool. Once: a second call waits for the first. */
  close(): Promise<void>;
}

/** The stateful services of one app over `deps`, reading from `replicas` where a read may be stale. */
function createServices(deps: AppDeps, replicas: ReadReplicas | undefined): AppServices {
  const candidatesOn = (db: Db) => new CandidatesService(db, deps.config, deps.candidates);
  return {
    candidates: replicas ? new ReplicaRoutedCandidates(candidatesOn(deps.db), replicas, candidatesOn) : candidatesOn(deps.db),
    render: { cache: new RenderCache(), budget: new AnswerBudget(deps.config.PLACEMENT_MAX_ANSWER_BYTES) },
    changes: new ChangeNotifier(poolOf(deps.db), deps.log, deps.config.PLACEMENT_DB_POOLER !== "transaction"),
    replicas,
  };
}

/**
 * PLACEMENT_READ_DATABASE_URL's standbys, when set, checked once before the
 * app serves (so reads go there from the first request). Their monitor reaches
 * the primary by the URL of the pool the app was given.
 */
function openReadReplicas(config: Config, primary: Db, log: Logger): Promise<ReadReplicas | undefined> {
  const replicaUrls = config.PLACEMENT_READ_DATABASE_URL ?? [];
  if (replicaUrls.length === 0) return Promise.resolve(undefined);
  return ReadReplicas.open(primary, {
    primaryUrl: urlOf(primary),
    replicaUrls,
    maxLagSeconds: config.PLACEMENT_READ_MAX_LAG_SECONDS,
    poolSize: config.PLACEMENT_DB_POOL_SIZE,
    limits: sessionLimits(config),
    log,
  });
}

export async function createApp(given: AppDeps): Promise<PlacementApp> {
  const app = new Hono<AppEnv>();
  const metrics = given.metrics ?? createMetrics();
  const deps = { ...given, metrics };
  const policy = createPolicyEnforcer(deps.config);
  const replicas = await openReadReplicas(deps.config, deps.db, deps.log);
  if (replicas) watchReplicas(metrics.registry, replicas);
  const services = createServices(deps, replicas);
  const routeDeps: RouteDeps = {
    ...deps,
    store: {
      db: deps.db,
      allocationRetries: deps.config.PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT,
      onRetry: metrics.transactionRetry,
      transactionLimits: perTransactionLimits(sessionLimits(deps.config)),
    },
    services,
  };

  const onListenerError = (err: unknown) => deps.log.error("request listener failed", { error: String(err) });
  app.use(observeRequests([requestLogger(deps.log), metrics.onRequest], onListenerError));
  app.use(requestId);
  app.use(handlerDeadline(deps.config.PLACEMENT_HANDLER_TIMEOUT_MS, deps.log));
  // Before CORS, authentication and microversions, as oslo's healthcheck filter sits in front of an API.
  const health = healthcheckHandler(databaseCheck(deps.db));
  app.on(["GET", "HEAD"], "/healthcheck", health);
  const cors = corsMiddleware(deps.config);
  if (cors) app.use(cors);
  app.use(async (c, next) => {
    c.set("policy", policy);
    await next();
  });
  app.use(authMiddleware(deps.config, deps.log));
  app.use(microversion);
  app.use(headerChecks);
  app.use(bodySizeLimit(deps.config));

  for (const routes of [
    rootRoutes,
    openApiRoutes,
    operationsRoutes,
    resourceProviderRoutes,
    inventoryRoutes,
    aggregateRoutes,
    resourceClassRoutes,
    traitRoutes,
    allocationRoutes,
    usageRoutes,
    reshaperRoutes,
    allocationCandidateRoutes,
    claimRoutes,
    explainRoutes,
    changeRoutes,
  ]) {
    app.route("/", routes(routeDeps));
  }

  app.notFound(() => {
    throw pastHandler(new PlacementError(404, ""));
  });

  app.onError((err, c) => {
    const placementError = placementErrorFor(err) ?? internalError(err, deps, c.get("requestId"), c.req.method, c.req.path);
    if (placementError.status === 409) metrics.conflict(conflictKind(err));
    if (placementError.status === 503 && !(err instanceof PlacementError)) {
      // The client is told only to retry; the operator is told what the database said.
      deps.log.warn("database unavailable", { requestId: c.get("requestId"), method: c.req.method, path: c.req.path, cause: rootCause(err) });
    }
    const version = c.get("microversion");
    const includeCode = version ? version.atLeast("1.23") : false;
    const headers: Record<string, string> = { ...placementError.headers };
    if (version) {
      headers["openstack-api-version"] = `placement ${version.toString()}`;
      if (variesByMicroversion(placementError)) headers.vary = "openstack-api-version";
    }
    // Like Placement (webob), errors follow the Accept header: JSON, HTML or
    // plain text; webob answers HEAD with its HTML page whatever Accept says.
    const accept = c.req.method === "HEAD" ? "text/html" : c.req.header("accept");
    const { contentType, text } = renderError(placementError, accept, c.get("requestId"), includeCode);
    return c.body(text, placementError.status as 400, { ...headers, "content-type": contentType });
  });

  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      services.render.cache.close();
      await services.changes.close();
      await replicas?.close();
    })());
  return { app, services, close };
}

/** Logs an unexpected failure in full and gives the client nothing internal. */
function internalError(err: Error, deps: AppDeps, requestId: string | undefined, method: string, path: string): PlacementError {
  const cause = rootCause(err);
  deps.log.error("unhandled error", {
    requestId,
    method,
    path,
    error: err.message.split("\n")[0],
    cause: cause.message,
    sqlstate: sqlState(err),
    ...(cause.code && cause.code !== sqlState(err) ? { errno: cause.code } : {}),
    stack: err.stack,
  });
  return new PlacementError(500, `An unexpected error occurred (request ${requestId ?? "unknown"}).`);
}
