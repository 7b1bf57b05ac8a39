/**
 * The differential test against the reference Placement:
 *
 *   npm run compat -- --seeds 1,2,3,4,5 --steps 2000
 *
 * For each seed it starts the reference (Placement 8.0.0 from Debian) and our
 * built server, each on a fresh database of the PostgreSQL at DATABASE_URL
 * (default postgresql://postgres@127.0.0.1:5432/postgres, a role that may
 * create databases), runs the seeded workload against both and compares every
 * answer. It prints the differences grouped by cause, with the first
 * occurrence of each, and exits 1 if any is not a documented reference bug
 * (docs/placement-bugs.md). Without the reference installed it says so and
 * exits 0, or 2 with --require-reference.
 *
 * --port-base N: the reference listens on N and ours on N+1 (both must be
 * free; an engineer passes a port of the spare range, so concurrent runs on
 * one machine cannot meet). Without it each takes a free ephemeral port.
 */
import { parseArgs } from "node:util";
import { runSeed, type Finding } from "./differential.js";
import { referenceUnavailable, startOurs, startReference } from "./servers.js";

const { values } = parseArgs({
  options: {
    seeds: { type: "string", default: "1" },
    steps: { type: "string", default: "500" },
    "require-reference": { type: "boolean", default: false },
    "max-shown": { type: "string", default: "40" },
    "port-base": { type: "string" },
    "sweep-every": { type: "string", default: "50" },
  },
});

const seeds = values.seeds!.split(",").map((s) => Number(s.trim()));
const steps = Number(values.steps);
const maxShown = Number(values["max-shown"]);
const portBase = values["port-base"] === undefined ? undefined : Number(values["port-base"]);
if (portBase !== undefined && !(Number.isInteger(portBase) && portBase > 0 && portBase < 65535)) {
  console.error(`compat: --port-base must be a port number, not ${values["port-base"]}`);
  process.exit(2);
}
const adminUrl = process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

const clip = (text: string, max = 700) => (text.length > max ? `${text.slice(0, max)}...` : text);

function describe(finding: Finding): string {
  const { exchange: e } = finding;
  const headers = (h: Headers) =>
    ["content-type", "vary", "openstack-api-version", "location", "allow", "cache-control", "last-modified"]
      .filter((n) => h.has(n))
      .map((n) => `${n}: ${h.get(n)}`)
      .join("; ");
  return [
    `  first at seed ${finding.seed} step ${finding.step}`,
    `  request:   ${e.request.method} ${e.request.path}  ${JSON.stringify(e.request.headers)}`,
    e.request.body !== undefined ? `  body:      ${clip(e.request.body)}` : null,
    `  reference: ${e.reference.status} [${headers(e.reference.headers)}] ${clip(e.reference.text)}`,
    `  ours:      ${e.ours.status} [${headers(e.ours.headers)}] ${clip(e.ours.text)}`,
    finding.after
      ? `  after:     ${finding.after.request.method} ${finding.after.request.path} ${clip(finding.after.request.body ?? "", 1500)} -> ` +
        `${finding.after.reference.status} ${clip(finding.after.reference.text, 300)} | ours ${finding.after.ours.status}`
      : null,
    ...finding.differences.map((d) => `  differs:   ${d.aspect}: ${clip(d.reference, 200)} vs ${clip(d.ours, 200)}`),
  ]
    .filter((line) => line !== null)
    .join("\n");
}

/** The servers of the seed being run: an interrupted run stops them (they run in process groups of their own). */
const running = new Set<{ stop(): Promise<void> }>();
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`compat: ${signal}, stopping the servers`);
    void Promise.allSettled([...running].map((s) => s.stop())).then(() => process.exit(130));
  });
}

async function main(): Promise<number> {
  const missing = referenceUnavailable();
  if (missing) {
    console.log(`compat: skipped, the reference Placement cannot run here: ${missing}`);
    return values["require-reference"] ? 2 : 0;
  }
  const all: Finding[] = [];
  for (const seed of seeds) {
    const dbPrefix = `compat_${process.pid}_${seed}`;
    const started = Date.now();
    const [reference, ours] = await Promise.all([
      startReference(adminUrl, `${dbPrefix}_ref`, portBase),
      startOurs(adminUrl, `${dbPrefix}_ours`, portBase === undefined ? undefined : portBase + 1),
    ]);
    running.add(reference).add(ours);
    try {
      const result = await runSeed(seed, steps, { reference: reference.baseUrl, ours: ours.baseUrl }, Number(values["sweep-every"]));
      const unexpected = result.findings.filter((f) => !f.knownBug).length;
      console.log(
        `seed ${seed}: ${result.steps} steps, ${result.requests} requests, ${result.findings.length} differences ` +
          `(${unexpected} not documented) in ${((Date.now() - started) / 1000).toFixed(0)} s`,
      );
      all.push(...result.findings);
    } finally {
      running.clear();
      await Promise.all([reference.stop(), ours.stop()]);
    }
  }
  const byCause = new Map<string, Finding[]>();
  for (const f of all) byCause.set(f.cause, [...(byCause.get(f.cause) ?? []), f]);
  const causes = [...byCause].sort((a, b) => Number(!!a[1][0].knownBug) - Number(!!b[1][0].knownBug) || b[1].length - a[1].length);
  let shown = 0;
  for (const [cause, findings] of causes) {
    const bug = findings[0].knownBug;
    console.log(`\n== ${cause}  (${findings.length}x)${bug ? `  [documented: docs/placement-bugs.md#${bug}]` : ""}`);
    if (shown++ < maxShown) console.log(describe(findings[0]));
  }
  const unexpected = all.filter((f) => !f.knownBug);
  const documented = all.length - unexpected.length;
  console.log(
    `\ncompat: seeds ${seeds.join(",")} x ${steps} steps: ${unexpected.length} differences in ` +
      `${new Set(unexpected.map((f) => f.cause)).size} causes, ${documented} documented reference bugs`,
  );
  return unexpected.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`compat: ${(err as Error).stack ?? err}`);
    process.exit(2);
  },
);
