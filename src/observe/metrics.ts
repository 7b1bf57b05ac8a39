/**
 * The Prometheus metrics of one server process, in a registry of its own
 * (made by the server or createApp and passed down; nothing module-level).
 * Labels are bounded: route templates, never uuids; methods; statuses.
 * With several workers the primary aggregates every worker's registry
 * (metrics-endpoint.ts), so one scrape sees the whole server.
 */
import type pg from "pg";
import { collectDefaultMetrics, Counter, exponentialBuckets, Gauge, Histogram, Registry } from "prom-client";
import type { RequestListener, RequestRecord } from "./requests.js";

/** Why a request got 409. */
export type ConflictKind = "capacity" | "provider_generation" | "consumer_generation" | "concurrent_update" | "claim_refused" | "other";

export interface Metrics {
  readonly registry: Registry;
  /** Feeds the request counters and histograms (a listener of observeRequests). */
  readonly onRequest: RequestListener;
  conflict(kind: ConflictKind): void;
  /** A transaction that is being run again: the SQLSTATE PostgreSQL aborted it with, or another cause's name. */
  transactionRetry(cause: string): void;
  candidatesReturned(count: number): void;
  /** The exposition text GET /metrics answers: this process's, or the whole cluster's. */
  scrape(): Promise<string>;
}

/** The Prometheus text format's content type, as every scrape is answered. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export interface MetricsOptions {
  /** The pool whose size, use and waiters are reported. */
  pool?: pg.Pool;
  /** Node's process metrics (CPU, memory, event loop, GC); once per process, as they install observers. */
  processMetrics?: boolean;
  /** Replaces the local scrape (a worker asks the primary for the cluster's). */
  scrape?: () => Promise<string>;
}

/** Successful writes of allocations: a scheduler's claims. */
const CLAIM_ROUTES = new Set(["/allocations/:consumer_uuid", "/allocations", "/reshaper", "/claims"]);
const RETRY_CAUSES: Record<string, string> = { "40P01": "deadlock", "40001": "serialization_failure" };

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const labels = ["route", "method", "status"] as const;
  const requests = new Counter({ name: "placement_http_requests_total", help: "HTTP requests answered.", labelNames: labels, registers: [registry] });
  const duration = new Histogram({
    name: "placement_http_request_duration_seconds",
    help: "Time from the request's arrival until its response has left.",
    labelNames: labels,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const bytes = new Histogram({
    name: "placement_http_response_bytes",
    help: "Response body sizes.",
    labelNames: ["route", "method"],
    buckets: exponentialBuckets(256, 4, 10),
    registers: [registry],
  });
  const conflicts = new Counter({ name: "placement_conflicts_total", help: "409 answers by cause.", labelNames: ["kind"], registers: [registry] });
  const retries = new Counter({
    name: "placement_db_transaction_retries_total",
    help: "Transactions run again after PostgreSQL aborted them.",
    labelNames: ["cause"],
    registers: [registry],
  });
  const candidates = new Histogram({
    name: "placement_allocation_candidates_returned",
    help: "Allocation candidates in each GET /allocation_candidates answer.",
    buckets: [0, 1, 10, 100, 1000, 10_000, 100_000],
    registers: [registry],
  });
  const claims = new Counter({
    name: "placement_claims_written_total",
    help: "Successful allocation writes (PUT/POST /allocations, POST /reshaper, POST /claims).",
    labelNames: ["route"],
    registers: [registry],
  });
  const pool = options.pool;
  if (pool) {
    new Gauge({
      name: "placement_db_pool_max_connections",
      help: "Configured size of the database pool.",
      registers: [registry],
      collect() {
        this.set(pool.options.max ?? 0);
      },
    });
    new Gauge({
      name: "placement_db_pool_connections",
      help: "Open database connections by state.",
      labelNames: ["state"],
      registers: [registry],
      collect() {
        this.set({ state: "idle" }, pool.idleCount);
        this.set({ state: "in_use" }, pool.totalCount - pool.idleCount);
      },
    });
    new Gauge({
      name: "placement_db_pool_waiting_requests",
      help: "Queries waiting for a free connection.",
      registers: [registry],
      collect() {
        this.set(pool.waitingCount);
      },
    });
  }
  if (options.processMetrics) collectDefaultMetrics({ register: registry });

  const onRequest = (r: RequestRecord) => {
    const l = { route: r.route, method: r.method, status: String(r.status) };
    requests.inc(l);
    duration.observe(l, r.durationMs / 1000);
    if (r.bytes !== null) bytes.observe({ route: r.route, method: r.method }, r.bytes);
    if (r.status >= 200 && r.status < 300 && r.method !== "GET" && CLAIM_ROUTES.has(r.route)) claims.inc({ route: r.route });
  };

  return {
    registry,
    onRequest,
    conflict: (kind) => conflicts.inc({ kind }),
    transactionRetry: (cause) => retries.inc({ cause: RETRY_CAUSES[cause] ?? cause }),
    candidatesReturned: (count) => candidates.observe(count),
    scrape: options.scrape ?? (() => registry.metrics()),
  };
}
