/** Faults to inject, each touching only what the run owns (its own database, its own server processes). */
import net from "node:net";
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

/** Makes `database` read-only (or writable again) and ends its sessions, so that new ones take the setting. */
export async function setReadOnly(adminUrl: string, database: string, on: boolean): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query("SET default_transaction_read_only = off");
    await client.query(`ALTER DATABASE "${database.replace(/"/g, '""')}" SET default_transaction_read_only = ${on ? "on" : "off"}`);
    await client.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [database]);
  } finally {
    await client.end();
  }
}

/** Holds the row lock of one random resource provider for `ms`, as a stuck session would. */
export async function holdRandomProviderLock(url: string, ms: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("BEGIN");
    await client.query("SELECT id FROM resource_providers WHERE id = (SELECT id FROM resource_providers ORDER BY random() LIMIT 1) FOR UPDATE");
    await new Promise((r) => setTimeout(r, ms));
    await client.query("COMMIT");
  } finally {
    await client.end();
  }
}

/**
 * A slowloris client: headers never finished, a byte every 100 ms. Resolves
 * with the status line the server closed it with ("" if none), or "not cut
 * off" after `giveUpMs`.
 */
export function slowClient(baseUrl: string, giveUpMs: number): Promise<string> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    let answer = "";
    const drip = setInterval(() => socket.writable && socket.write("a"), 100);
    const giveUp = setTimeout(() => {
      socket.destroy();
      resolve("not cut off");
    }, giveUpMs);
    socket.on("connect", () => socket.write("GET / HTTP/1.1\r\nHost: placement\r\nX-Slow: "));
    socket.on("data", (d) => (answer += d));
    socket.on("error", () => undefined);
    socket.on("close", () => {
      clearInterval(drip);
      clearTimeout(giveUp);
      resolve(answer.split("\r\n")[0]);
    });
  });
}
