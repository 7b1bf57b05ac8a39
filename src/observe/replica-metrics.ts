/**
 * The read replicas' metrics (PLACEMENT_READ_DATABASE_URL), labelled by
 * standby (host:port/database): how far behind each is, whether it serves,
 * and where the reads that may go to one were served. With several workers
 * each measures on its own: the cluster's scrape shows the largest lag and
 * the smallest "usable" of them.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { ReadReplicas } from "../db/read-replicas.js";

export function watchReplicas(registry: Registry, replicas: ReadReplicas): void {
  new Gauge({
    name: "placement_db_replica_lag_seconds",
    help: "How far behind the primary the standby was at its last check (checked every second or so); NaN when unknown.",
    labelNames: ["replica"],
    aggregator: "max",
    registers: [registry],
    collect() {
      for (const s of replicas.states()) this.set({ replica: s.name }, s.behindSeconds ?? Number.NaN);
    },
  });
  new Gauge({
    name: "placement_db_replica_usable",
    help: "1 when the standby serves reads (reachable, in recovery, within PLACEMENT_READ_MAX_LAG_SECONDS), else 0.",
    labelNames: ["replica"],
    aggregator: "min",
    registers: [registry],
    collect() {
      for (const s of replicas.states()) this.set({ replica: s.name }, s.usable ? 1 : 0);
    },
  });
  const served = new Counter({
    name: "placement_db_replica_reads_total",
    help: "Reads that may go to a standby (GET /allocation_candidates), by where they were served.",
    labelNames: ["served_by"],
    registers: [registry],
  });
  replicas.onServed((by) => served.inc({ served_by: by }));
}
