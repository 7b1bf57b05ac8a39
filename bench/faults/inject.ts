/** Faults to inject, each touching only what the run owns (its own database, its own server processes). */
import pg from "pg";

/** Terminates every backend connected to `database` except the caller's own; returns how many. */
export async function terminateBackends(adminUrl: string, database: string): Promise<number> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [database],
    );
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

/** The database name of a PostgreSQL URL. */
export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/** Calls `inject` at random intervals (between `minMs` and `maxMs`) until `until` resolves; resolves with the results. */
export async function repeatedly<T>(inject: () => Promise<T>, minMs: number, maxMs: number, until: Promise<unknown>): Promise<T[]> {
  let stop = false;
  void until.then(() => (stop = true));
  const results: T[] = [];
  while (!stop) {
    await new Promise((r) => setTimeout(r, minMs + Math.random() * (maxMs - minMs)));
    if (!stop) results.push(await inject());
  }
  return results;
}
