/**
 * `npm run bench -- pooler [--size 1000] [--iterations 40] [--bouncer-port 20370]`
 *
 * What PLACEMENT_DB_POOLER=transaction gives up: GET /allocation_candidates
 * (the flat shapes of bench/candidates.ts, on its flat data set) from three
 * servers over one database, measured in alternating blocks (measure() in
 * candidates.ts):
 *   named       the default: named prepared statements, planned once per connection;
 *   unnamed     PLACEMENT_DB_POOLER=transaction, straight to PostgreSQL: the statements'
 *               cost alone (each is parsed and planned at every request);
 *   via pgbouncer  the same through a real PgBouncer in transaction mode (when installed):
 *               the statements plus the pooler's hop.
 * Not a test: it prints figures and asserts nothing.
 */
import { freePort } from "../src/net.js";
import { pgBouncerMissing, startPgBouncer, type PgBouncer } from "../test/support/clusters.js";
import { createDb, dropDb, load, measure, SHAPES, startOurs, type Server } from "./candidates.js";

interface Options {
  size: number;
  iterations: number;
  bouncerPort: number;
}

function parseArgs(args: string[]): Options {
  const opts: Options = { size: 1000, iterations: 40, bouncerPort: 20370 };
  for (let i = 0; i < args.length; i++) {
    const next = () => args[++i] ?? "";
    if (args[i] === "--size") opts.size = Number(next());
    else if (args[i] === "--iterations") opts.iterations = Number(next());
    else if (args[i] === "--bouncer-port") opts.bouncerPort = Number(next());
  }
  return opts;
}

export default async function (args: string[]): Promise<void> {
  const opts = parseArgs(args);
  const dbName = "bench_pooler_flat";
  const url = await createDb(dbName);
  const started: Server[] = [];
  let bouncer: PgBouncer | undefined;
  try {
    started.push(await startOurs(url, await freePort()));
    await load(url, "flat", opts.size, "ours");
    started.push(await startOurs(url, await freePort(), { PLACEMENT_DB_POOLER: "transaction" }));
    const servers = [
      { name: "named", port: started[0].port },
      { name: "unnamed", port: started[1].port },
    ];
    const missing = pgBouncerMissing();
    if (missing) process.stderr.write(`pooler bench: no PgBouncer column (${missing})\n`);
    else {
      const target = new URL(url);
      bouncer = await startPgBouncer({ port: opts.bouncerPort, target: { host: target.hostname, port: Number(target.port || 5432) } });
      started.push(await startOurs(bouncer.urlFor(dbName), await freePort(), { PLACEMENT_DB_POOLER: "transaction" }));
      servers.push({ name: "via pgbouncer", port: started[2].port });
    }
    const lines = [
      `| ${opts.size} flat nodes: query | ${servers.map((s) => `${s.name} p50 ms`).join(" | ")} | ${servers.slice(1).map((s) => `${s.name} / named`).join(" | ")} |`,
      `|---|${servers.map(() => "---|").join("")}${servers.slice(1).map(() => "---|").join("")}`,
    ];
    for (const shape of SHAPES.filter((s) => s.variant === "flat")) {
      const rows = await measure(servers, shape, opts.iterations);
      const named = rows[0].p50;
      lines.push(`| ${shape.name} | ${rows.map((r) => r.p50.toFixed(1)).join(" | ")} | ${rows.slice(1).map((r) => `${(r.p50 / named).toFixed(2)}x`).join(" | ")} |`);
      process.stderr.write(`${shape.name}: done\n`);
    }
    process.stdout.write(`${lines.join("\n")}\n`);
  } finally {
    await Promise.all(started.map((s) => s.stop()));
    await bouncer?.stop();
    await dropDb(dbName);
  }
}
