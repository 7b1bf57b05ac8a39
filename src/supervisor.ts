/**
 * The primary's care of its HTTP workers: the server is up once a worker has
 * bound the port; a worker that dies is replaced, after a pause that grows
 * while workers keep dying young; workers that cannot start at all, again and
 * again, make the whole server fail with their cause, so that a supervisor or
 * container runtime sees it and can act.
 */
import cluster, { type Worker } from "node:cluster";
import type { Logger } from "./log.js";

/** A worker's last word to the primary when it cannot start. */
export interface StartupFailure {
  type: "startup-failed";
  cause: string;
}

/** Consecutive workers that die before listening, with none serving, before the server gives up. */
export const MAX_START_FAILURES = 5;
/** A worker that lived this long before dying is not counted as dying young. */
const STABLE_MS = 10_000;
const MAX_BACKOFF_MS = 10_000;

/** The pause before the next fork after `young` consecutive young deaths: none for the first, then doubling. */
export function restartDelay(young: number): number {
  return young <= 1 ? 0 : Math.min(MAX_BACKOFF_MS, 100 * 2 ** (young - 2));
}

export interface Workers {
  /** Resolves once a worker listens; rejects with the cause when workers keep failing to start. */
  up: Promise<void>;
  /** Resolves after any later fatal failure (the same rule once the server was up and every worker is gone). */
  failed: Promise<Error>;
  /** SIGTERM to every worker (they drain); resolves once all have exited. */
  stop(): Promise<void>;
  /** SIGKILL to every worker. */
  kill(): void;
}

export function superviseWorkers(count: number, env: Record<string, string>, log: Logger): Workers {
  // Workers accept from the shared socket themselves. Under Node's default round-robin the primary
  // accepts and hands each connection to a worker; one handed to a worker that dies before taking it
  // stays open in the primary with nobody to answer it, and its client hangs.
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  let stopping = false;
  let startFailures = 0;
  let young = 0;
  let lastCause = "worker exited before listening";
  const listening = new Set<Worker>();
  const bornAt = new Map<Worker, number>();
  let resolveUp!: () => void;
  let rejectUp!: (err: Error) => void;
  let resolveFailed!: (err: Error) => void;
  const up = new Promise<void>((res, rej) => {
    resolveUp = res;
    rejectUp = rej;
  });
  const failed = new Promise<Error>((res) => (resolveFailed = res));
  up.catch(() => undefined);

  const fork = () => {
    if (stopping) return;
    const worker = cluster.fork(env);
    bornAt.set(worker, Date.now());
    worker.on("message", (m: StartupFailure) => {
      if (m?.type === "startup-failed") lastCause = m.cause;
    });
    worker.on("listening", () => {
      listening.add(worker);
      startFailures = 0;
      resolveUp();
    });
  };

  cluster.on("exit", (worker, code, signal) => {
    const wasListening = listening.delete(worker);
    const lived = Date.now() - (bornAt.get(worker) ?? 0);
    bornAt.delete(worker);
    if (stopping) return;
    if (!wasListening) startFailures++;
    young = lived < STABLE_MS ? young + 1 : 1;
    if (startFailures >= MAX_START_FAILURES && listening.size === 0) {
      stopping = true;
      const err = new Error(`${startFailures} workers in a row failed to start: ${lastCause}`);
      rejectUp(err);
      resolveFailed(err);
      return;
    }
    const delayMs = restartDelay(young);
    log.warn("worker exited; starting another", { pid: worker.process.pid, code, signal, delayMs, ...(wasListening ? {} : { cause: lastCause }) });
    setTimeout(fork, delayMs);
  });

  for (let i = 0; i < count; i++) fork();

  const alive = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
  return {
    up,
    failed,
    stop: async () => {
      stopping = true;
      await Promise.all(
        alive().map(
          (w) =>
            new Promise<void>((resolve) => {
              w.once("exit", () => resolve());
              w.process.kill("SIGTERM");
            }),
        ),
      );
    },
    kill: () => {
      stopping = true;
      for (const w of alive()) w.process.kill("SIGKILL");
    },
  };
}
