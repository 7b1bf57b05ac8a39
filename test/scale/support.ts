/** What the scale tests share: PgBouncer in front of the run's PostgreSQL. */
import { inject } from "vitest";
import { startPgBouncer, type PgBouncer } from "../support/clusters.js";

/** PgBouncer in transaction mode on `port` in front of the PostgreSQL the test databases live on, `serverPool` server connections per database. */
export function bouncerForTestDatabases(port: number, serverPool: number): Promise<PgBouncer> {
  const target = new URL(inject("adminDatabaseUrl"));
  return startPgBouncer({
    port,
    target: { host: target.hostname, port: Number(target.port || 5432), user: decodeURIComponent(target.username), password: decodeURIComponent(target.password) },
    poolMode: "transaction",
    settings: { default_pool_size: serverPool },
  });
}

/** A test database's URL (direct) turned into the same database through `bouncer`. */
export const through = (bouncer: PgBouncer, url: string): string => bouncer.urlFor(new URL(url).pathname.slice(1));
