/**
 * `placement explain '<query>'`: GET /allocation_candidates/explain against
 * the configured database, as a funnel table (or JSON with --json), for an
 * operator asking why a request found no host (docs/explain.md).
 */
import type { Command } from "commander";
import { placementErrorFor } from "../../http/error-table.js";
import { parseMicroversion } from "../../http/microversion.js";
import { parseCandidatesQuery } from "../../query/request-groups.js";
import { CandidatesService } from "../../services/candidates/service.js";
import { explainCandidates, explainSource, explanationBody, type Explanation } from "../../services/explain/service.js";
import type { Cli } from "../context.js";
import { ExitCode, UsageError } from "../exit-codes.js";

interface Options {
  json?: boolean;
  microversion: string;
}

/** The funnel as the terminal shows it: counts right-aligned after each filter, then the nearest misses. */
export function funnelText(e: Explanation): string {
  const rows: Array<[string, string]> = [];
  for (const g of e.groups) {
    rows.push([g.suffix === "" ? "Unsuffixed group" : `Group ${g.suffix}`, "providers left"]);
    for (const f of g.filters) rows.push([`  ${f.filter}`, String(f.remaining)]);
  }
  rows.push(["Trees", "trees left"]);
  for (const s of e.trees) rows.push([`  ${s.constraint}`, String(s.remaining)]);
  const left = Math.max(...rows.map(([l]) => l.length));
  const right = Math.max(...rows.map(([, r]) => r.length));
  const lines = [`Allocation requests: ${e.allocationRequests}`];
  for (const [l, r] of rows) {
    // A blank line before each section's heading (the only rows not indented).
    if (!l.startsWith(" ")) lines.push("");
    lines.push(`${l.padEnd(left)}  ${r.padStart(right)}`);
  }
  if (e.nearest.length > 0) {
    lines.push("", "Nearest misses");
    for (const n of e.nearest) lines.push(`  ${n.name ?? "(deleted)"} (${n.uuid})`, ...n.short.map((s) => `    ${s}`));
  }
  return `${lines.join("\n")}\n`;
}

export function register(program: Command, cli: Cli): void {
  program
    .command("explain")
    .argument("<query>", "the query string of GET /allocation_candidates, e.g. 'resources=VCPU:4,MEMORY_MB:2048&required=HW_CPU_X86_AVX2'")
    .description("Explain what an allocation candidates query finds: providers left after each filter, trees left after each constraint that combines groups, the nearest misses.")
    .option("--json", "print GET /allocation_candidates/explain's JSON")
    .option("--microversion <version>", "read the query as at this microversion", "latest")
    .action(
      cli.action(async (text: string, options: Options) => {
        const mv = refusedAsUsage(() => parseMicroversion(`placement ${options.microversion}`));
        const pairs = [...new URLSearchParams(text.replace(/^\?/, "")).entries()];
        const query = refusedAsUsage(() => parseCandidatesQuery(pairs, mv));
        return cli.withDatabase(async (database) => {
          const service = new CandidatesService(database.db, cli.settings());
          const e = await explainCandidates(explainSource(service, mv), database.db, query).catch(asUsage);
          if (options.json) cli.print(explanationBody(e), true, () => "");
          else cli.print(e, false, funnelText);
          return ExitCode.OK;
        });
      }),
    );
}

/** What the API would refuse with a 4xx is the command line's fault here: exit 2, with the API's words. */
function asUsage(err: unknown): never {
  const refusal = placementErrorFor(err);
  if (refusal && refusal.status >= 400 && refusal.status < 500) throw new UsageError(refusal.detail);
  throw err;
}

function refusedAsUsage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    return asUsage(err);
  }
}
