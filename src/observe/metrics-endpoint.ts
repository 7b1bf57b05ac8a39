/**
 * Where GET /metrics is answered from. With several workers each keeps its
 * own registry; the primary asks them all over the cluster IPC channel and
 * sums with prom-client's AggregatorRegistry.aggregate, so a scrape of any
 * worker or of PLACEMENT_METRICS_PORT sees the whole server. The metrics port is a plain
 * HTTP listener with no authentication: bind it where only the scraper
 * reaches.
 */
import cluster, { type Worker } from "node:cluster";
import { createServer, type Server } from "node:http";
import { AggregatorRegistry, type Registry } from "prom-client";
import type { Logger } from "../log.js";
import { METRICS_CONTENT_TYPE } from "./metrics.js";

const READY = "placement:metrics-ready";
const COLLECT = "placement:metrics-collect";
const COLLECTED = "placement:metrics-collected";
const SCRAPE_REQUEST = "placement:metrics-scrape";
const SCRAPE_RESULT = "placement:metrics-text";
const TIMEOUT_MS = 5_000;

/** One registry's metrics as getMetricsAsJSON gives them: what travels over IPC. */
type RegistryJson = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>;

interface Message {
  type: string;
  id: number;
  text?: string;
  metrics?: RegistryJson;
  error?: string;
}

/** In a worker: answer the primary's collection requests from `registry`, then say so. */
export function reportToPrimary(registry: Registry): void {
  process.on("message", (message: Message) => {
    if (message?.type !== COLLECT) return;
    registry.getMetricsAsJSON().then(
      (metrics) => process.send?.({ type: COLLECTED, id: message.id, metrics }),
      (err: Error) => process.send?.({ type: COLLECTED, id: message.id, error: err.message }),
    );
  });
  process.send?.({ type: READY });
}

/** In a worker: the cluster's metrics, from the primary. */
export function clusterScrapeFromWorker(): () => Promise<string> {
  let next = 0;
  return () =>
    new Promise((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        process.off("message", onMessage);
        reject(new Error("the primary process did not answer the metrics request"));
      }, TIMEOUT_MS);
      const onMessage = (message: Message) => {
        if (message?.type !== SCRAPE_RESULT || message.id !== id) return;
        clearTimeout(timer);
        process.off("message", onMessage);
        if (message.error !== undefined) reject(new Error(message.error));
        else resolve(message.text ?? "");
      };
      process.on("message", onMessage);
      process.send!({ type: SCRAPE_REQUEST, id });
    });
}

/**
 * In the primary: collects every ready worker's registry and sums them
 * (prom-client's aggregation: counters and histograms add up, each metric's
 * own aggregator otherwise). A worker that is still starting is not asked; a
 * worker that does not answer fails the scrape rather than making counters
 * seem to go backwards.
 */
export function aggregateWorkers(): () => Promise<string> {
  const ready = new Set<Worker>();
  const pending = new Map<number, (worker: Worker, message: Message) => void>();
  let next = 0;
  const scrape = () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const asked = [...ready].filter((w) => w.isConnected());
      const answers: RegistryJson[] = [];
      const finish = (err?: Error) => {
        clearTimeout(timer);
        pending.delete(id);
        if (err) reject(err);
        else resolve(AggregatorRegistry.aggregate(answers).metrics());
      };
      const timer = setTimeout(() => finish(new Error("a worker did not answer the metrics request")), TIMEOUT_MS);
      pending.set(id, (_worker, message) => {
        if (message.error !== undefined) return finish(new Error(message.error));
        answers.push(message.metrics ?? []);
        if (answers.length === asked.length) finish();
      });
      if (asked.length === 0) return finish();
      for (const w of asked) w.send({ type: COLLECT, id });
    });
  cluster.on("exit", (worker) => ready.delete(worker));
  cluster.on("message", (worker, message: Message) => {
    if (message?.type === READY) ready.add(worker);
    else if (message?.type === COLLECTED) pending.get(message.id)?.(worker, message);
    else if (message?.type === SCRAPE_REQUEST) {
      scrape().then(
        (text) => worker.send({ type: SCRAPE_RESULT, id: message.id, text }),
        (err: Error) => worker.send({ type: SCRAPE_RESULT, id: message.id, error: err.message }),
      );
    }
  });
  return scrape;
}

/** PLACEMENT_METRICS_PORT: GET /metrics and nothing else. */
export async function serveMetricsPort(
  port: number,
  host: string,
  scrape: () => Promise<string>,
  log: Logger,
): Promise<{ server: Server; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("Not Found\n");
      return;
    }
    scrape().then(
      (text) => res.writeHead(200, { "content-type": METRICS_CONTENT_TYPE }).end(text),
      (err: Error) => {
        log.warn("metrics scrape failed", { error: err.message });
        res.writeHead(503, { "content-type": "text/plain" }).end("metrics unavailable\n");
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  log.info("metrics listening", { host, port });
  return { server, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
