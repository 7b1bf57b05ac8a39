/**
 * `npm run bench -- explain [--sizes 1000,10000] [--rounds 3] [--iterations 10] [--shapes TEXT,...]`
 *
 * What GET /allocation_candidates/explain costs next to GET
 * /allocation_candidates for the same query, on our server only (the
 * reference has no explain), over bench/candidates.ts' flat and nested data
 * sets. For each query it alternates rounds of the two requests (measure's
 * blocks, after its warm-up) and prints each round's p50 of both and their
 * ratio, so a noisy machine shows as a spread of ratios rather than as one
 * misleading figure. Not a test: it prints figures and asserts nothing.
 */
import { freePort } from "../src/net.js";
import { createDb, dropDb, load, measure, SHAPES, startOurs, type Shape } from "./candidates.js";

interface Options {
  sizes: number[];
  rounds: number;
  iterations: number;
  shapes: string[];
}

function parseArgs(args: string[]): Options {
  const opts: Options = { sizes: [1000, 10000], rounds: 3, iterations: 10, shapes: [] };
  for (let i = 0; i < args.length; i++) {
    const next = () => args[++i] ?? "";
    if (args[i] === "--sizes") opts.sizes = next().split(",").filter(Boolean).map(Number);
    else if (args[i] === "--rounds") opts.rounds = Number(next());
    else if (args[i] === "--iterations") opts.iterations = Number(next());
    else if (args[i] === "--shapes") opts.shapes = next().split(",").filter(Boolean);
  }
  return opts;
}

/** The same query as GET /allocation_candidates/explain (the shapes with a limit are left out: explain would ignore it). */
function pair(shape: Shape): [Shape, Shape] {
  const query = shape.query;
  return [
    { ...shape, query },
    { ...shape, name: `explain ${shape.name}`, query, path: `/allocation_candidates/explain?${query}` },
  ];
}

export default async function (args: string[]): Promise<void> {
  const opts = parseArgs(args);
  const shapes = SHAPES.filter((s) => !s.query.includes("limit") && (opts.shapes.length === 0 || opts.shapes.some((t) => s.name.includes(t))));
  const lines = ["| nodes | query | round | candidates p50 ms | explain p50 ms | explain / candidates |", "|---|---|---|---|---|---|"];
  for (const size of opts.sizes) {
    for (const variant of ["flat", "nested"] as const) {
      const mine = shapes.filter((s) => s.variant === variant);
      if (mine.length === 0) continue;
      const db = `bench_explain_${variant}_${size}`;
      const url = await createDb(db);
      const ours = await startOurs(url, await freePort());
      try {
        await load(url, variant, size, "ours");
        const servers = [{ name: "ours", port: ours.port }];
        for (const shape of mine) {
          const [candidates, explain] = pair(shape);
          for (let round = 1; round <= opts.rounds; round++) {
            // Warm-up only before the first round of each.
            const warmUps = round === 1 ? 5 : 0;
            const [c] = await measure(servers, candidates, opts.iterations, warmUps);
            const [e] = await measure(servers, explain, opts.iterations, warmUps);
            lines.push(`| ${size} | ${shape.name.replace(", no limit", "")} | ${round} | ${c.p50.toFixed(1)} | ${e.p50.toFixed(1)} | ${(e.p50 / c.p50).toFixed(2)}x |`);
          }
          process.stderr.write(`${size} ${variant} ${shape.name}: done\n`);
        }
      } finally {
        await ours.stop();
        await dropDb(db);
      }
    }
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}
