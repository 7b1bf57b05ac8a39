/**
 * Reading a /metrics answer the way Prometheus does: parsed by the official
 * Python client's text-format parser (Debian's python3-prometheus-client,
 * installed by .ci/run), so a malformed exposition fails the test.
 */
import { execFileSync } from "node:child_process";

const PARSER = `
import json, math, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({"family": family.name, "type": family.type, "name": s.name, "labels": s.labels, "value": s.value if math.isfinite(s.value) else str(s.value)})
print(json.dumps(out))
`;

interface Sample {
  family: string;
  type: string;
  name: string;
  labels: Record<string, string>;
  /** "nan", "inf" or "-inf" for the values JSON has no numbers for. */
  value: number | string;
}

/** Whether the parser is installed; tests that need it skip with this reason otherwise. */
export const prometheusParserMissing: string | undefined = (() => {
  try {
    execFileSync("/usr/bin/python3", ["-c", "import prometheus_client.parser"], { stdio: "ignore" });
    return undefined;
  } catch {
    return "python3-prometheus-client is not installed (apt-get install python3-prometheus-client; .ci/run does)";
  }
})();

export class Scrape {
  readonly samples: Sample[];
  constructor(text: string) {
    this.samples = JSON.parse(execFileSync("/usr/bin/python3", ["-c", PARSER], { input: text, encoding: "utf8" })) as Sample[];
  }

  has(family: string): boolean {
    return this.samples.some((s) => s.family === family);
  }

  /** The sum of the samples named `name` (a counter's name without _total, a histogram's name_count, ...) matching `labels`. */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.samples
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((total, s) => total + Number(s.value), 0);
  }

  /** Every value a label takes in a family (to check cardinality). */
  labelValues(family: string, label: string): Set<string> {
    return new Set(this.samples.filter((s) => s.family === family && label in s.labels).map((s) => s.labels[label]));
  }
}

export async function scrape(url: string, headers: Record<string, string> = {}): Promise<Scrape> {
  const res = await fetch(url, { headers });
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${await res.text()}`);
  return new Scrape(await res.text());
}
