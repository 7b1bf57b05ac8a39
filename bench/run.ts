/**
 * Benchmark entry: `npm run bench -- <name> [options]` runs bench/<name>.ts.
 * (`candidates --replica` runs bench/candidates-replica.ts.) Benchmarks are not
 * tests: they print figures, they assert nothing about time.
 */
const [name, ...args] = process.argv.slice(2);
const known = ["claims", "candidates", "soak", "pooler", "failover", "explain"];
if (!name || !known.includes(name)) {
  process.stderr.write(`usage: npm run bench -- <${known.join("|")}> [options]\n`);
  process.exit(2);
}
// candidates --replica is a bench of its own (candidates-replica.ts): another topology, another load.
const file = name === "candidates" && args.includes("--replica") ? "candidates-replica" : name;
const mod = (await import(`./${file}.js`)) as { default: (args: string[]) => Promise<void> };
await mod.default(args);
