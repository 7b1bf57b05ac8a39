/**
 * Benchmark entry: `npm run bench -- <name> [options] [--markdown]` runs bench/<name>.ts.
 * (`candidates --replica` runs bench/candidates-replica.ts.) Benchmarks are not
 * tests: they print figures, they assert nothing about time. With --markdown the
 * results are headed by the machine, the versions and the exact command
 * (bench/markdown.ts), ready for docs/benchmarks.md.
 */
import { environment } from "./markdown.js";

const [name, ...given] = process.argv.slice(2);
const known = ["claims", "candidates", "soak", "pooler", "failover", "explain"];
if (!name || !known.includes(name)) {
  process.stderr.write(`usage: npm run bench -- <${known.join("|")}> [options] [--markdown]\n`);
  process.exit(2);
}
const markdown = given.includes("--markdown");
// Taken out here, so no bench's own option parser has to know it.
const args = given.filter((a) => a !== "--markdown");
// candidates --replica is a bench of its own (candidates-replica.ts): another topology, another load.
const file = name === "candidates" && args.includes("--replica") ? "candidates-replica" : name;
// These two print a report of counts and checks rather than tables: kept verbatim in a block.
const verbatim = markdown && (name === "soak" || name === "failover");
if (markdown) process.stdout.write(`${await environment(name, given)}\n`);
if (verbatim) process.stdout.write("```text\n");
const mod = (await import(`./${file}.js`)) as { default: (args: string[]) => Promise<void> };
try {
  await mod.default(args);
} finally {
  if (verbatim) process.stdout.write("```\n");
}
