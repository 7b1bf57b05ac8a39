/**
 * The checks that keep README.md and docs/ honest: links and anchors resolve,
 * paths named in backquotes exist, and every `npm run` script and `placement`
 * command they name is one the project has. Links are checked by
 * remark-validate-links run through unified-engine, the engine remark-cli is
 * made of: only that way does it check headings in other files too (its
 * plain API checks files and this file's own headings). Code spans are found
 * by remark's parser, never by a pattern over the raw text, so a backquote
 * inside a fenced block cannot start a false span.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { Writable } from "node:stream";
import type { Code, InlineCode, Root } from "mdast";
import { remark } from "remark";
import remarkValidateLinks from "remark-validate-links";
import { engine, type Context, type Options as EngineOptions } from "unified-engine";
import { visit } from "unist-util-visit";

/** README.md and every page of docs/, relative to `root`. */
export function documentationFiles(root: string): string[] {
  const docs = existsSync(path.join(root, "docs")) ? readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md")) : [];
  return ["README.md", ...docs.sort().map((f) => `docs/${f}`)].filter((f) => existsSync(path.join(root, f)));
}

/** Every relative link or anchor in `files` that does not resolve, as `file:line:column: reason`. */
export async function linkProblems(root: string, files: string[]): Promise<string[]> {
  // The engine types its plugin list for plugins taking any options; this one takes its own.
  const plugins = [[remarkValidateLinks, { repository: false, root }]] as unknown as EngineOptions["plugins"];
  const discard = new Writable({ write: (_chunk, _encoding, done) => done() });
  const context = await new Promise<Context>((resolve, reject) => {
    engine(
      {
        processor: remark(),
        cwd: root,
        files,
        plugins,
        detectConfig: false,
        detectIgnore: false,
        output: false,
        out: false,
        quiet: true,
        color: false,
        streamError: discard,
      },
      (error, _code, result) => (error || !result ? reject(error ?? new Error("unified-engine gave no result")) : resolve(result)),
    );
  });
  return context.files.flatMap((file) =>
    file.messages.map((m) => `${path.relative(root, file.path)}:${m.line ?? 0}:${m.column ?? 0}: ${m.reason}`),
  );
}

/**
 * The text of every code span and fenced block of a markdown document, with
 * the line it starts on. Blocks marked `text` (diagrams, log lines) are left
 * out: they show output, not commands.
 */
export function codeTexts(markdown: string): Array<{ text: string; line: number; block: boolean }> {
  const tree = remark().parse(markdown) as Root;
  const found: Array<{ text: string; line: number; block: boolean }> = [];
  visit(tree, (node) => {
    if (node.type === "inlineCode") found.push({ text: (node as InlineCode).value, line: node.position?.start.line ?? 0, block: false });
    if (node.type === "code" && (node as Code).lang !== "text") {
      found.push({ text: (node as Code).value, line: node.position?.start.line ?? 0, block: true });
    }
  });
  return found;
}

/** Folders and files at the top of the repository a path in backquotes may start with. */
const REPOSITORY_TOP = /^(src|test|bench|docs|drizzle|\.ci)\/|^(package\.json|Dockerfile|README\.md|biome\.jsonc|drizzle\.config\.ts|vitest\.config\.ts)$/;

/** Does a repository path, with `*` as a wildcard within one name, name something that exists? */
function exists(root: string, repoPath: string): boolean {
  const parts = repoPath.replace(/\/$/, "").split("/");
  let candidates = [root];
  for (const part of parts) {
    const next: string[] = [];
    for (const dir of candidates) {
      if (!part.includes("*")) {
        if (existsSync(path.join(dir, part))) next.push(path.join(dir, part));
        continue;
      }
      const pattern = new RegExp(`^${part.split("*").map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`);
      try {
        for (const entry of readdirSync(dir)) if (pattern.test(entry)) next.push(path.join(dir, entry));
      } catch {
        // not a folder: nothing below it
      }
    }
    candidates = next;
  }
  return candidates.length > 0;
}

/** Code spans that look like a path in this repository (`src/app.ts`, `test/scale/`) and name nothing. */
export function pathProblems(root: string, file: string, markdown: string): string[] {
  const problems: string[] = [];
  for (const { text, line, block } of codeTexts(markdown)) {
    if (block) continue;
    const candidate = text.trim();
    if (!REPOSITORY_TOP.test(candidate) || /\s/.test(candidate)) continue;
    if (!exists(root, candidate)) problems.push(`${file}:${line}: \`${candidate}\` does not exist`);
  }
  return problems;
}

/** `npm run NAME` in code spans and blocks whose NAME is not a script of package.json. */
export function npmScriptProblems(file: string, markdown: string, scripts: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const { text, line } of codeTexts(markdown)) {
    for (const m of text.matchAll(/\bnpm run ([\w:.-]+)/g)) {
      if (!(m[1] in scripts)) problems.push(`${file}:${line}: npm run ${m[1]}: no such script in package.json`);
    }
  }
  return problems;
}

/** A command of the `placement` program and the commands below it. */
export interface CommandTree {
  name: string;
  commands: CommandTree[];
}

/**
 * `placement WORD [WORD]` in code spans and blocks that is not a command of the
 * program: the first word must be a command, and the second too when the first
 * is a group of commands (`placement db migrate`). Only where a command starts:
 * at the start of a line or after a shell separator, so another program's
 * argument (`nova-manage placement heal_allocations`) is not taken for one.
 */
export function cliProblems(file: string, markdown: string, program: CommandTree): string[] {
  const problems: string[] = [];
  for (const { text, line } of codeTexts(markdown)) {
    for (const m of text.matchAll(/(?:^[ \t]*|[;|&(][ \t]*)placement[ \t]+([a-z][\w-]*)(?:[ \t]+([a-z][\w-]*))?/gm)) {
      const command = program.commands.find((c) => c.name === m[1]);
      if (!command) {
        problems.push(`${file}:${line}: placement ${m[1]}: no such command`);
        continue;
      }
      if (command.commands.length > 0 && m[2] !== undefined && !command.commands.some((c) => c.name === m[2])) {
        problems.push(`${file}:${line}: placement ${m[1]} ${m[2]}: no such command`);
      }
    }
  }
  return problems;
}

/** Reads a documentation file of `root`. */
export const read = (root: string, file: string) => readFileSync(path.join(root, file), "utf8");
