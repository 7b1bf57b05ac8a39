/**
 * README.md and docs/ stay true to the repository: every relative link and
 * anchor resolves, every path in backquotes exists, every `npm run` script and
 * `placement` command named is real. The second half gives the same checks a
 * small tree with one mistake of each kind, so a checker that stopped finding
 * them would fail here too.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildProgram } from "../../src/cli/program.js";
import { cliProblems, type CommandTree, documentationFiles, linkProblems, npmScriptProblems, pathProblems, read } from "./check-docs.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const scripts = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;

function tree(command: Command): CommandTree {
  return { name: command.name(), commands: command.commands.map(tree) };
}

async function placementProgram(): Promise<CommandTree> {
  const { program } = await buildProgram({ env: {}, stdout: () => {}, stderr: () => {} });
  return tree(program);
}

describe("the documentation of this repository", () => {
  const files = documentationFiles(ROOT);

  it("has the README and the pages of docs/", () => {
    expect(files).toContain("README.md");
    expect(files.filter((f) => f.startsWith("docs/")).length).toBeGreaterThan(0);
  });

  it("has no broken relative link or anchor", async () => {
    expect(await linkProblems(ROOT, files)).toEqual([]);
  });

  it("names only paths that exist in backquotes", () => {
    expect(files.flatMap((f) => pathProblems(ROOT, f, read(ROOT, f)))).toEqual([]);
  });

  it("names only npm scripts that package.json has", () => {
    expect(files.flatMap((f) => npmScriptProblems(f, read(ROOT, f), scripts))).toEqual([]);
  });

  it("names only placement commands the program has", async () => {
    const program = await placementProgram();
    expect(program.commands.map((c) => c.name)).toContain("serve");
    expect(files.flatMap((f) => cliProblems(f, read(ROOT, f), program))).toEqual([]);
  });
});

describe("the checks, on a tree with one mistake of each kind", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "docs-check-"));
    mkdirSync(path.join(dir, "docs"));
    mkdirSync(path.join(dir, "src"));
    writeFileSync(path.join(dir, "src", "app.ts"), "");
    writeFileSync(
      path.join(dir, "README.md"),
      [
        "# Example",
        "",
        "## Start here",
        "",
        "[good](docs/guide.md#configuration), [own heading](#start-here), [a file](src/app.ts).",
        "[missing page](docs/missing.md), [missing anchor](docs/guide.md#no-such-heading), [missing here](#nowhere).",
        "",
        "`src/app.ts` exists, `src/gone.ts` does not; `docs/*.md` matches.",
        "",
        "```sh",
        "npm run build && npm run nonesuch",
        "placement db migrate && placement db frobnicate && placement serve && placement launch",
        "nova-manage placement heal_allocations",
        "```",
        "",
      ].join("\n"),
    );
    writeFileSync(path.join(dir, "docs", "guide.md"), "# Guide\n\n## Configuration\n\nBack to [the start](../README.md#start-here).\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("finds the broken links and anchors, and only those", async () => {
    const problems = await linkProblems(dir, documentationFiles(dir));
    expect(problems).toHaveLength(3);
    expect(problems.join("\n")).toMatch(/docs\/missing\.md/);
    expect(problems.join("\n")).toMatch(/no-such-heading/);
    expect(problems.join("\n")).toMatch(/nowhere/);
  });

  it("finds a path that does not exist", () => {
    expect(pathProblems(dir, "README.md", read(dir, "README.md"))).toEqual(["README.md:8: `src/gone.ts` does not exist"]);
  });

  it("finds an npm script package.json does not have", () => {
    expect(npmScriptProblems("README.md", read(dir, "README.md"), { build: "tsc" })).toEqual([
      "README.md:10: npm run nonesuch: no such script in package.json",
    ]);
  });

  it("finds placement commands the program does not have", async () => {
    expect(cliProblems("README.md", read(dir, "README.md"), await placementProgram())).toEqual([
      "README.md:10: placement db frobnicate: no such command",
      "README.md:10: placement launch: no such command",
    ]);
  });
});
