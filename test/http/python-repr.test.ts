/**
 * Schema errors print the instance as Python's repr() of what json.loads
 * read: numbers in the kind the client wrote (0.0, -0.0, 100.0 for 1e2,
 * every digit of a large integer, nan and inf), strings with Python's quotes
 * and escapes (lone surrogates, control and format characters, non-breaking
 * spaces). Checked against Debian's python3 on seeded JSON texts.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseJsonText } from "../../src/http/json-text.js";
import { pyRepr } from "../../src/http/validation.js";
import { Random } from "../compat/random.js";

const PYTHON = "/usr/bin/python3";
const missing = existsSync(PYTHON) ? undefined : `${PYTHON} not installed`;

const reprOf = (text: string) => pyRepr(parseJsonText(text));

describe("pyRepr of a body as written", () => {
  it.each([
    ["0.0", "0.0"],
    ["-0.0", "-0.0"],
    ["-0", "0"],
    ["1e2", "100.0"],
    ["1E-7", "1e-07"],
    ["2.5e20", "2.5e+20"],
    ["1e400", "inf"],
    ["-1e400", "-inf"],
    ["NaN", "nan"],
    ["-Infinity", "-inf"],
    ["123456789012345678901234567890", "123456789012345678901234567890"],
    ['"\\ud800"', "'\\ud800'"],
    ['"a\\u00a0b\\u200bc\\u0001\\u007f\\u2028 é😀"', "'a\\xa0b\\u200bc\\x01\\x7f\\u2028 é😀'"],
    ['"it\'s"', '"it\'s"'],
    ['"both \' and \\""', "'both \\' and \"'"],
    ['{"a": [1.0, null, true], "b": {"c": -0}}', "{'a': [1.0, None, True], 'b': {'c': 0}}"],
  ])("%s is %s", (text, expected) => {
    expect(reprOf(text)).toBe(expected);
  });
});

const CHARS = ["a", "Z", "_", " ", "'", '\\"', "\\\\", "\\n", "\\t", "\\r", "\\u0000", "\\u001f", "\\u007f", "\\u0085", "\\u00a0", "é", "ß", "名", "😀", "\\ud800", "\\udfff", "\\ud83d\\ude00", "\\u200b", "\\u2028", "\\u2029", "\\u3000", "\\ufeff", "\\ue000", "\\uffff", "\\u0378"];
const NUMBERS = ["0", "-0", "7", "-12", "0.0", "-0.0", "1.5", "1e2", "1E-7", "2.5e20", "1e16", "1e400", "-1e400", "NaN", "Infinity", "-Infinity", "123456789012345678901234567890", "0.1", "3.14159265358979", "1e-5", "123e-2"];

function randomText(r: Random, depth: number): string {
  const kind = r.int(0, depth > 0 ? 5 : 3);
  if (kind === 0) return r.pick(NUMBERS);
  if (kind === 1) return r.pick(["null", "true", "false"]);
  if (kind <= 3) return `"${Array.from({ length: r.int(0, 6) }, () => r.pick(CHARS)).join("")}"`;
  if (kind === 4) return `[${Array.from({ length: r.int(0, 3) }, () => randomText(r, depth - 1)).join(", ")}]`;
  return `{${Array.from({ length: r.int(0, 3) }, (_, i) => `"k${i}${r.pick(["", "é", "'"])}": ${randomText(r, depth - 1)}`).join(", ")}}`;
}

describe.skipIf(!!missing)(`pyRepr agrees with python3's repr(json.loads(text))${missing ? ` (skipped: ${missing})` : ""}`, () => {
  it("on seeded JSON texts", () => {
    const r = new Random(5);
    const texts = Array.from({ length: 3000 }, () => randomText(r, 3));
    const run = spawnSync(PYTHON, ["-c", "import json, sys\nprint(json.dumps([repr(json.loads(t)) for t in json.load(sys.stdin)]))"], {
      input: JSON.stringify(texts),
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(run.status, String(run.stderr)).toBe(0);
    const theirs = JSON.parse(run.stdout.toString()) as string[];
    const differing = texts.map((text, i) => ({ text, python: theirs[i], ours: reprOf(text) })).filter((d) => d.python !== d.ours);
    expect(differing.slice(0, 5)).toEqual([]);
  });
});
