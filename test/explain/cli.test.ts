/**
 * `placement explain` against the configured database, as an operator runs
 * it (the built CLI in a process of its own): the funnel table, --json equal
 * to GET /allocation_candidates/explain's answer, and a query the API
 * refuses refused with the API's words and exit code 2.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { custom, startData, type Data } from "../candidates/data.js";
import { runPlacement } from "../support/cli-process.js";
import type { Harness } from "../support/harness.js";

let t: Harness;
let d: Data;
let cls: string;
let query: string;
let full: string;
beforeAll(async () => {
  ({ t, d } = await startData());
  cls = custom("CLI");
  const agg = randomUUID();
  const host = await d.provider({ inventory: { [cls]: { total: 4 } }, aggregates: [agg] });
  full = host.uuid;
  await d.allocate(host, cls, 3);
  await d.provider({ inventory: { [cls]: { total: 16 } } });
  query = `resources=${cls}:2&member_of=${agg}`;
});
afterAll(async () => t.close());

it("prints the funnel table and the nearest misses", async () => {
  const run = await runPlacement(["explain", query], { DATABASE_URL: t.url });
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  const lines = run.stdout.split("\n");
  expect(lines[0]).toBe("Allocation requests: 0");
  expect(lines[2]).toMatch(/^Unsuffixed group +providers left$/);
  expect(lines.find((l) => l.startsWith(`  resources:${cls}:2 `))).toMatch(/ 1$/);
  expect(lines.find((l) => l.startsWith("  member_of:"))).toMatch(/ 0$/);
  expect(lines.find((l) => l.startsWith("  every group on one tree"))).toMatch(/ 0$/);
  expect(run.stdout).toContain(`Nearest misses\n  rp-${full} (${full})\n    ${cls}: 2 asked, 1 free of 4\n`);
});

it("prints with --json what GET /allocation_candidates/explain answers", async () => {
  const run = await runPlacement(["explain", "--json", query], { DATABASE_URL: t.url });
  expect(run.code).toBe(0);
  const api = await t.request("GET", `/allocation_candidates/explain?${query}`);
  expect(JSON.parse(run.stdout)).toEqual(api.body);
});

it("refuses what the API refuses, in its words, with exit code 2", async () => {
  const bad = `resources=${cls}:1&group_policy=maybe`;
  const api = await t.request("GET", `/allocation_candidates/explain?${bad}`);
  const run = await runPlacement(["explain", bad], { DATABASE_URL: t.url });
  expect(run.code).toBe(2);
  const words = "Invalid query string parameters: 'maybe' is not one of ['none', 'isolate']";
  expect(api.body.errors[0].detail).toContain(words);
  expect(run.stderr).toBe(`placement: ${words}\n`);
  const unknown = await runPlacement(["explain", `resources=${custom("NOPE")}:1`], { DATABASE_URL: t.url });
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain("No such resource class");
});
