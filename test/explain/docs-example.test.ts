/**
 * The worked example of docs/explain.md is what `placement explain` prints:
 * the cloud the page describes is built here, the command is run, and its
 * output must be the page's block, character for character; the README shows
 * the same example and is held to the same output.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startData, type Data } from "../candidates/data.js";
import { runPlacement } from "../support/cli-process.js";
import type { Harness } from "../support/harness.js";
import { projectRoot } from "../support/server-process.js";

const AGGREGATE = "6f1c8a3e-0b7d-4e55-9a43-2d1f0c9b7e10";
const NODE = (n: number) => `0a5e6f7b-1c2d-4e3f-8a9b-00000000000${n}`;

let t: Harness;
let d: Data;
beforeAll(async () => {
  ({ t, d } = await startData());
  const specs = [
    { traits: ["HW_CPU_X86_AVX2"], aggregates: [AGGREGATE] },
    { traits: [], aggregates: [AGGREGATE] },
    { traits: ["HW_CPU_X86_AVX2"], aggregates: [] },
  ];
  for (const [i, spec] of specs.entries()) {
    const p = await d.provider({ inventory: { VCPU: 16, MEMORY_MB: 65536 }, ...spec });
    // The page names its nodes cn1..cn3 with fixed uuids (this test's database is its own).
    await t.sql(`UPDATE resource_providers SET uuid = $2, name = $3 WHERE id = $1`, [p.id, NODE(i + 1), `cn${i + 1}`]);
    if (i === 0) await d.allocate(p, "VCPU", 14);
  }
});
afterAll(async () => t.close());

it("prints the page's worked example", async () => {
  const whole = await readFile(path.join(projectRoot, "docs/explain.md"), "utf8");
  const page = whole.slice(whole.indexOf("## A worked example"));
  const block = /```\n\$ placement explain '([^']+)'\n([\s\S]*?)```/.exec(page);
  expect(block).not.toBeNull();
  const [, query, printed] = block!;
  const run = await runPlacement(["explain", query], { DATABASE_URL: t.url });
  expect(run.stderr).toBe("");
  expect(run.stdout).toBe(printed);
  const json = /```json\n([\s\S]*?)```/.exec(page);
  const api = await t.request("GET", `/allocation_candidates/explain?${query}`);
  expect(api.body).toEqual(JSON.parse(json![1]));
  const readme = /```\n\$ placement explain '([^']+)'\n([\s\S]*?)```/.exec(await readFile(path.join(projectRoot, "README.md"), "utf8"));
  expect(readme?.slice(1)).toEqual([query, printed]);
});
