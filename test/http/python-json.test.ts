/**
 * The body reader fails as Placement's Python does (json.loads after strict
 * UTF-8), with the same message at the same position, and reads the same
 * values where Python reads JSON that JSON.parse refuses. The wording cases
 * are Python 3.11's (Debian's, which runs the reference); the oracle cases
 * ask that interpreter itself about thousands of seeded mutations of JSON.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseJsonText, type NumberToken } from "../../src/http/json-text.js";
import { loadsPythonJson, loadsPythonJsonBody, MAX_NESTING, PythonJsonError, scanPythonJson } from "../../src/http/python-json.js";
import { Random } from "../compat/random.js";

const utf8 = (text: string) => new TextEncoder().encode(text);

/** The message a body fails with, or "ok". */
function messageFor(body: string | Uint8Array): string {
  try {
    loadsPythonJsonBody(typeof body === "string" ? utf8(body) : body);
    return "ok";
  } catch (err) {
    if (err instanceof PythonJsonError) return err.message;
    throw err;
  }
}

describe("Python's wording and positions", () => {
  const cases: [string, string][] = [
    ["", "Expecting value: line 1 column 1 (char 0)"],
    ["  \t", "Expecting value: line 1 column 4 (char 3)"],
    ["\n\n", "Expecting value: line 3 column 1 (char 2)"],
    ["nul", "Expecting value: line 1 column 1 (char 0)"],
    ["-", "Expecting value: line 1 column 1 (char 0)"],
    ["-Inf", "Expecting value: line 1 column 1 (char 0)"],
    ["[1,]", "Expecting value: line 1 column 4 (char 3)"],
    ['{"a": }', "Expecting value: line 1 column 7 (char 6)"],
    ["{", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"],
    ["{'a': 1}", "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"],
    ['{"a": 1,}', "Expecting property name enclosed in double quotes: line 1 column 9 (char 8)"],
    ['{"a" 1}', "Expecting ':' delimiter: line 1 column 6 (char 5)"],
    ['{"a"', "Expecting ':' delimiter: line 1 column 5 (char 4)"],
    ["[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"],
    ["[1", "Expecting ',' delimiter: line 1 column 3 (char 2)"],
    ['{"a": 1 "b": 2}', "Expecting ',' delimiter: line 1 column 9 (char 8)"],
    ['"abc', "Unterminated string starting at: line 1 column 1 (char 0)"],
    ['["x", "y\\', "Unterminated string starting at: line 1 column 7 (char 6)"],
    ['"a\tb"', "Invalid control character at: line 1 column 3 (char 2)"],
    ['"a\nb"', "Invalid control character at: line 1 column 3 (char 2)"],
    ['"\\q"', "Invalid \\escape: line 1 column 2 (char 1)"],
    ['"\\u12"', "Invalid \\uXXXX escape: line 1 column 3 (char 2)"],
    ['"\\u1234', "Invalid \\uXXXX escape: line 1 column 3 (char 2)"],
    ['"\\ud800\\udc0"', "Invalid \\uXXXX escape: line 1 column 9 (char 8)"],
    ['"\\ud800\\udc00', "Invalid \\uXXXX escape: line 1 column 9 (char 8)"],
    ["{} x", "Extra data: line 1 column 4 (char 3)"],
    ["1.", "Extra data: line 1 column 2 (char 1)"],
    ["01", "Extra data: line 1 column 2 (char 1)"],
    ["1e+", "Extra data: line 1 column 2 (char 1)"],
    ["Infinityx", "Extra data: line 1 column 9 (char 8)"],
    ["\ufeff{}", "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"],
    // Positions count code points: é is one (two bytes), 😀 is one (two UTF-16 units, four bytes).
    ['{"é": x}', "Expecting value: line 1 column 7 (char 6)"],
    ['{"😀😀": x}', "Expecting value: line 1 column 8 (char 7)"],
    ['{\n  "name": "CUSTOM_A",\n  "x": 😀,\n}', "Expecting value: line 3 column 8 (char 31)"],
    ['{\r\n "a": 1\r\n "b"}', "Expecting ',' delimiter: line 3 column 2 (char 13)"],
    [`[${"1".repeat(4301)}]`, "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; use sys.set_int_max_str_digits() to increase the limit"],
    [`-${"2".repeat(5000)}`, "Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits; use sys.set_int_max_str_digits() to increase the limit"],
    [`${"[".repeat(MAX_NESTING + 1)}`, `Nesting deeper than ${MAX_NESTING} arrays and objects: line 1 column 955 (char 954)`],
  ];
  it.each(cases)("%j fails with %s", (body, expected) => {
    expect(messageFor(body)).toBe(expected);
  });

  it("words bytes that are not UTF-8 as Python's UnicodeDecodeError", () => {
    const bytes = (...b: number[]) => new Uint8Array(b);
    expect(messageFor(bytes(0xff))).toBe("'utf-8' codec can't decode byte 0xff in position 0: invalid start byte");
    expect(messageFor(bytes(0x7b, 0x22, 0xc3, 0x22))).toBe("'utf-8' codec can't decode byte 0xc3 in position 2: invalid continuation byte");
    expect(messageFor(bytes(0x22, 0xe2, 0x82, 0x78))).toBe("'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte");
    expect(messageFor(bytes(0x22, 0xf0, 0x9f, 0x98))).toBe("'utf-8' codec can't decode bytes in position 1-3: unexpected end of data");
    expect(messageFor(bytes(0x22, 0xed, 0xa0, 0x80, 0x22))).toBe("'utf-8' codec can't decode byte 0xed in position 1: invalid continuation byte");
    expect(messageFor(bytes(0xc0, 0x80))).toBe("'utf-8' codec can't decode byte 0xc0 in position 0: invalid start byte");
  });

  it("accepts the deepest nesting Python accepts, and an integer of 4300 digits", () => {
    const deep = `${"[".repeat(MAX_NESTING)}${"]".repeat(MAX_NESTING)}`;
    expect(messageFor(deep)).toBe("ok");
    expect(messageFor(`{"a": ${"[{\"a\": ".repeat(MAX_NESTING / 2 - 1)}1${"}]".repeat(MAX_NESTING / 2 - 1)}}`)).toBe("ok");
    expect(loadsPythonJson(`[${"9".repeat(4300)}, 1.${"0".repeat(5000)}]`)).toEqual([Number("9".repeat(4300)), 1]);
  });
});

describe("values Python reads and JSON.parse does not", () => {
  it("reads NaN, Infinity and -Infinity as numbers", () => {
    expect(loadsPythonJson('{"a": NaN, "b": [Infinity, -Infinity], "c": 1e400}')).toEqual({ a: Number.NaN, b: [Infinity, -Infinity], c: Infinity });
    expect(loadsPythonJson("NaN")).toBeNaN();
  });

  it("keeps the last of equal keys in the first one's place, and __proto__ as a member", () => {
    const value = loadsPythonJson('{"a": 1, "b": 2, "a": NaN, "__proto__": {"x": 1}}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(["a", "b", "__proto__"]);
    expect(value.a).toBeNaN();
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(value, "__proto__")?.value).toEqual({ x: 1 });
  });

  it("keeps lone surrogate escapes and pairs them as Python does", () => {
    expect(loadsPythonJson('["\\ud800", "\\ud800\\udc00", "\\udc00\\ud800", NaN]')).toEqual(["\ud800", "😀".replace("😀", "\u{10000}"), "\udc00\ud800", Number.NaN]);
  });

  it("keeps number literals in parseJsonText, however long", () => {
    const ratio = `1.${"0".repeat(500)}1`;
    const parsed = parseJsonText(`{"allocation_ratio": ${ratio}, "total": NaN}`) as Record<string, NumberToken>;
    expect(parsed.allocation_ratio.text).toBe(ratio);
    expect(parsed.total.text).toBe("NaN");
  });

  it("gives what JSON.parse gives wherever JSON.parse reads the text", () => {
    const r = new Random(7);
    for (let i = 0; i < 300; i++) {
      const text = JSON.stringify(randomValue(r, 4));
      expect(scanPythonJson(text, Number)).toEqual(JSON.parse(text));
    }
  });
});

// --- The oracle: Debian's python3 itself --------------------------------------------------

const PYTHON = "/usr/bin/python3";

/** Python's answer per body: ["error", str(exc)] or ["ok", tagged value]; bodies go as hex. Placement answers a RecursionError with a 500, we with a 400. */
const ORACLE = `
import json, sys
def tag(v):
    if isinstance(v, dict): return ["o", [[k, tag(x)] for k, x in v.items()]]
    if isinstance(v, list): return ["a", [tag(x) for x in v]]
    if isinstance(v, str): return ["s", [ord(c) for c in v]]
    if isinstance(v, bool) or v is None: return ["k", v]
    return ["n", repr(v) if isinstance(v, float) else str(v)]
out = []
for body in json.load(sys.stdin):
    try:
        out.append(["ok", tag(json.loads(bytes.fromhex(body).decode("utf-8")))])
    except ValueError as exc:
        out.append(["error", str(exc)])
    except RecursionError:
        out.append(["error", "RecursionError"])
print(json.dumps(out))
`;

type Tagged = ["o", [string, Tagged][]] | ["a", Tagged[]] | ["s", number[]] | ["k", boolean | null] | ["n", string];

function tag(v: unknown): Tagged {
  if (Array.isArray(v)) return ["a", v.map(tag)];
  if (v !== null && typeof v === "object") return ["o", Object.entries(v).map(([k, x]): [string, Tagged] => [k, tag(x)])];
  if (typeof v === "string") return ["s", Array.from(v, (c) => c.codePointAt(0)!)];
  if (typeof v === "number") return ["n", String(v)];
  return ["k", v as boolean | null];
}

/** Python's number text as the double JavaScript holds ("nan", "inf", "1e+16", big ints). */
function normaliseNumbers(t: Tagged): Tagged {
  if (t[0] === "o") return ["o", t[1].map(([k, x]): [string, Tagged] => [k, normaliseNumbers(x)])];
  if (t[0] === "a") return ["a", t[1].map(normaliseNumbers)];
  if (t[0] === "n") return ["n", String(t[1] === "nan" ? Number.NaN : t[1] === "inf" ? Infinity : t[1] === "-inf" ? -Infinity : Number(t[1]))];
  return t;
}

function askPython(bodies: Uint8Array[]): [string, unknown][] {
  const input = JSON.stringify(bodies.map((b) => Buffer.from(b).toString("hex")));
  const run = spawnSync(PYTHON, ["-c", ORACLE], { input, maxBuffer: 256 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`python3 failed: ${run.stderr}`);
  return JSON.parse(run.stdout.toString());
}

function ours(body: Uint8Array): [string, unknown] {
  try {
    return ["ok", tag(loadsPythonJsonBody(body))];
  } catch (err) {
    if (!(err instanceof PythonJsonError)) throw err;
    return ["error", err.message.startsWith("Nesting deeper") ? "RecursionError" : err.message];
  }
}

function randomValue(r: Random, depth: number): unknown {
  const kind = r.int(0, depth > 0 ? 7 : 4);
  if (kind === 0) return r.pick([null, true, false]);
  if (kind === 1) return r.pick([0, -0, 1, -12, 3.5, 1e-7, 2.5e20, 16, 123456789012]);
  if (kind === 2 || kind === 3) return r.pick(["", "CUSTOM_A", "é", "😀x", "a\"b", "tab\tx", "line\nbreak", "\\", "\u0001", "ünïcødé 名前"]);
  if (kind === 4) return r.pick(["VCPU", "DISK_GB"]);
  if (kind === 5) return Array.from({ length: r.int(0, 3) }, () => randomValue(r, depth - 1));
  return Object.fromEntries(Array.from({ length: r.int(0, 3) }, (_, i) => [r.pick(["name", "total", "é", `k${i}`, "😀"]), randomValue(r, depth - 1)]));
}

/** JSON text, pretty-printed or not, with spaces and line breaks of all kinds. */
function randomJson(r: Random): string {
  const text = JSON.stringify(randomValue(r, 4), null, r.pick([undefined, 1, 2, "\t"]));
  return r.chance(0.2) ? text.replace(/\n/g, "\r\n") : text;
}

const FRAGMENTS = ['"', "\\", "\\u", "\\ud83d", "\\ude00", "\\x", "{", "}", "[", "]", ":", ",", " ", "\n", "\t", "\u0001", "\u007f", "-", "0", "1", ".", "e", "E", "+", "NaN", "Infinity", "-Infinity", "nul", "tru", "null", "é", "😀", "\ufeff", "'", "/", "\r\n", "00", "1e400", "\\u00e9"];

function mutate(r: Random, text: string): string {
  let out = text;
  for (let n = r.int(1, 3); n > 0; n--) {
    const at = r.int(0, out.length);
    const op = r.int(0, 3);
    if (op === 0) out = out.slice(0, at) + out.slice(at + r.int(1, 3));
    else if (op === 1) out = out.slice(0, at) + r.pick(FRAGMENTS) + out.slice(at);
    else if (op === 2) out = out.slice(0, at) + r.pick(FRAGMENTS) + out.slice(at + 1);
    else out = out.slice(0, at);
  }
  return out;
}

function mutateBytes(r: Random, bytes: Uint8Array): Uint8Array {
  const out = [...bytes];
  for (let n = r.int(1, 2); n > 0; n--) {
    const at = r.int(0, out.length);
    const junk = r.pick([[0xff], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0x80], [0xf4, 0x90, 0x80, 0x80], [0xef, 0xbb, 0xbf], [0xe0, 0x80]]);
    out.splice(at, r.int(0, 1), ...junk);
  }
  return new Uint8Array(out);
}

const missing = existsSync(PYTHON) ? undefined : `${PYTHON} not installed`;

describe.skipIf(!!missing)(`agrees with Python's json on seeded mutations${missing ? ` (skipped: ${missing})` : ""}`, () => {
  it("fails with the same message, or reads the same value", () => {
    const r = new Random(11);
    const bodies: Uint8Array[] = [];
    for (let i = 0; i < 4000; i++) bodies.push(utf8(mutate(r, randomJson(r))));
    for (let i = 0; i < 1500; i++) bodies.push(mutateBytes(r, utf8(randomJson(r))));
    // Long numbers around the digit limit. (Nesting is left out: python3 here starts with
    // fewer frames on its stack than Placement's handler, so it nests deeper.)
    bodies.push(utf8(`[1, ${"7".repeat(4301)}`), utf8(`["${"7".repeat(5000)}", x]`), utf8(`[1.${"7".repeat(5000)}]`));

    const theirs = askPython(bodies);
    const differing = bodies
      .map((body, i) => {
        const [kind, value] = theirs[i];
        const expected = kind === "ok" ? ["ok", normaliseNumbers(value as Tagged)] : theirs[i];
        return { body: Buffer.from(body).toString("utf8").slice(0, 200), expected, actual: ours(body) };
      })
      .filter((d) => JSON.stringify(d.expected) !== JSON.stringify(d.actual));
    expect(differing.slice(0, 5).map((d) => JSON.stringify(d))).toEqual([]);
    // The corpus means something: most bodies fail, and with every kind of message.
    const kinds = theirs
      .filter(([k]) => k === "error")
      .map(([, m]) => String(m))
      .map((m) => (m.includes("codec") ? m.slice(m.lastIndexOf(": ") + 2) : m.replace(/: (line|value has) .*$/s, "")));
    expect(kinds.length).toBeGreaterThan(3000);
    expect(new Set(kinds)).toEqual(
      new Set([
        "Expecting value",
        "Expecting property name enclosed in double quotes",
        "Expecting ':' delimiter",
        "Expecting ',' delimiter",
        "Unterminated string starting at",
        "Invalid control character at",
        "Invalid \\escape",
        "Invalid \\uXXXX escape",
        "Extra data",
        "Unexpected UTF-8 BOM (decode using utf-8-sig)",
        "Exceeds the limit (4300 digits) for integer string conversion",
        "invalid start byte",
        "invalid continuation byte",
        "unexpected end of data",
      ]),
    );
  });
});
