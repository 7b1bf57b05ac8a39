/**
 * JSON read as Placement reads a request body: oslo's jsonutils.loads, that is
 * strict UTF-8 and then Python's json.loads (its C scanner). Placement answers
 * a failure with "Malformed JSON: " and str(exc), so clients see Python's
 * wording and position ("Expecting ',' delimiter: line 3 column 5 (char 21)");
 * this module fails with the same message at the same place.
 *
 * Where Python and JSON.parse disagree on what is JSON, Python decides:
 * NaN, Infinity and -Infinity are numbers; a UTF-8 BOM is an error; an integer
 * of more than 4300 digits is refused (Python's int_max_str_digits); and more
 * than MAX_NESTING nested arrays and objects are refused (Python's recursion
 * limit, a 500 there, a 400 here). JSON.parse reads everything else the same
 * way, so it does the work when it agrees; the scanner only runs on the rare
 * body it refuses or that needs those two checks.
 *
 * Positions count code points of the decoded text, as Python's str does;
 * lines count "\n" only.
 */
import { decodeUtf8, describeInvalidUtf8 } from "./python-utf8.js";

/** A body that is not JSON for Python; the message is str(exc) as Placement prints it. */
export class PythonJsonError extends Error {
  override name = "PythonJsonError";
}

/**
 * The deepest nesting Placement's json.loads reads: one more array or object
 * exceeds the interpreter's recursion limit there (measured against Debian's
 * Placement 8.0.0 under uwsgi, on every route that reads a body).
 */
export const MAX_NESTING = 954;

/** Python's int_max_str_digits default: json.loads refuses a longer integer. */
const MAX_INT_DIGITS = 4300;

export type PyJson<N> = null | boolean | string | N | PyJson<N>[] | { [key: string]: PyJson<N> };

/** Builds a number from its literal ("-12", "1.5e3", "NaN", "Infinity", "-Infinity"). */
export type NumberReader<N> = (literal: string) => N;

/** " (char 21)" and the rest: JSONDecodeError's suffix, from a UTF-16 index. */
function where(text: string, index: number): string {
  const codePoints = (from: number, to: number) => {
    let n = to - from;
    for (let i = from; i < to - 1; i++) {
      const unit = text.charCodeAt(i);
      if (unit >= 0xd800 && unit <= 0xdbff) {
        const next = text.charCodeAt(i + 1);
        if (next >= 0xdc00 && next <= 0xdfff) {
          n--;
          i++;
        }
      }
    }
    return n;
  };
  const lineStart = index > 0 ? text.lastIndexOf("\n", index - 1) + 1 : 0;
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < lineStart; i = text.indexOf("\n", i + 1)) line++;
  const column = codePoints(lineStart, index) + 1;
  return `line ${line} column ${column} (char ${codePoints(0, index)})`;
}

const fail = (text: string, message: string, index: number): never => {
  throw new PythonJsonError(`${message}: ${where(text, index)}`);
};

const ESCAPES: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
const HEX4 = /^[0-9a-fA-F]{4}$/;
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const KEYWORDS = [
  ["null", null],
  ["true", true],
  ["false", false],
] as const;
const NON_FINITE = ["NaN", "Infinity", "-Infinity"];

const isSpace = (unit: number) => unit === 0x20 || unit === 0x09 || unit === 0x0a || unit === 0x0d;

/**
 * Python's json.loads over `text`, step for step where it matters for the
 * message: what is expected at each point, and which error wins.
 */
export function scanPythonJson<N>(text: string, number: NumberReader<N>): PyJson<N> {
  let at = 0;
  const skipSpace = () => {
    while (at < text.length && isSpace(text.charCodeAt(at))) at++;
  };

  /** The string whose opening quote is at `at`. */
  const string = (): string => {
    const begin = at;
    let out = "";
    let chunk = ++at;
    for (;;) {
      if (at >= text.length) fail(text, "Unterminated string starting at", begin);
      const unit = text.charCodeAt(at);
      if (unit === 0x22) break;
      if (unit <= 0x1f) fail(text, "Invalid control character at", at);
      if (unit !== 0x5c) {
        at++;
        continue;
      }
      out += text.slice(chunk, at);
      const escaped = text[at + 1];
      if (escaped === undefined) fail(text, "Unterminated string starting at", begin);
      if (escaped !== "u") {
        if (!Object.hasOwn(ESCAPES, escaped)) fail(text, "Invalid \\escape", at);
        out += ESCAPES[escaped];
        at += 2;
      } else {
        // Python wants the four digits and at least one character after them.
        const digits = text.slice(at + 2, at + 6);
        if (at + 6 >= text.length || !HEX4.test(digits)) fail(text, "Invalid \\uXXXX escape", at + 1);
        // Code units appended one by one form the same string as Python's surrogate pairing.
        out += String.fromCharCode(Number.parseInt(digits, 16));
        at += 6;
      }
      chunk = at;
    }
    out += text.slice(chunk, at);
    at++;
    return out;
  };

  const numberHere = (): N => {
    NUMBER.lastIndex = at;
    const match = NUMBER.exec(text);
    if (!match) fail(text, "Expecting value", at);
    const literal = match![0];
    if (match![1] === undefined && match![2] === undefined) {
      const digits = literal.length - (literal[0] === "-" ? 1 : 0);
      if (digits > MAX_INT_DIGITS) {
        throw new PythonJsonError(
          `Exceeds the limit (${MAX_INT_DIGITS} digits) for integer string conversion: value has ${digits} digits; use sys.set_int_max_str_digits() to increase the limit`,
        );
      }
    }
    at += literal.length;
    return number(literal);
  };

  const enter = (depth: number) => {
    if (depth > MAX_NESTING) fail(text, `Nesting deeper than ${MAX_NESTING} arrays and objects`, at);
    at++;
    skipSpace();
  };

  const object = (depth: number): { [key: string]: PyJson<N> } => {
    enter(depth);
    const result: { [key: string]: PyJson<N> } = {};
    if (text[at] === "}") {
      at++;
      return result;
    }
    for (;;) {
      if (text[at] !== '"') fail(text, "Expecting property name enclosed in double quotes", at);
      const key = string();
      skipSpace();
      if (text[at] !== ":") fail(text, "Expecting ':' delimiter", at);
      at++;
      skipSpace();
      // As JSON.parse: an own "__proto__" member, not the prototype; the last of equal keys wins, as in Python.
      Object.defineProperty(result, key, { value: value(depth), enumerable: true, writable: true, configurable: true });
      skipSpace();
      if (text[at] === "}") {
        at++;
        return result;
      }
      if (text[at] !== ",") fail(text, "Expecting ',' delimiter", at);
      at++;
      skipSpace();
    }
  };

  const array = (depth: number): PyJson<N>[] => {
    enter(depth);
    const result: PyJson<N>[] = [];
    if (text[at] === "]") {
      at++;
      return result;
    }
    for (;;) {
      result.push(value(depth));
      skipSpace();
      if (text[at] === "]") {
        at++;
        return result;
      }
      if (text[at] !== ",") fail(text, "Expecting ',' delimiter", at);
      at++;
      skipSpace();
    }
  };

  const value = (depth: number): PyJson<N> => {
    const ch = text[at];
    if (ch === '"') return string();
    if (ch === "{") return object(depth + 1);
    if (ch === "[") return array(depth + 1);
    for (const [word, result] of KEYWORDS) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return result;
      }
    }
    for (const word of NON_FINITE) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return number(word);
      }
    }
    return numberHere();
  };

  if (text.charCodeAt(0) === 0xfeff) fail(text, "Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
  skipSpace();
  const result = value(0);
  skipSpace();
  if (at !== text.length) fail(text, "Extra data", at);
  return result;
}

/** Whether arrays and objects nest deeper than `limit` in a JSON.parse result (at most limit + 1 frames deep). */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (limit === 0) return true;
  // Index and for-in loops: no array of members to allocate on a large body.
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (nestsDeeperThan(value[i], limit - 1)) return true;
    return false;
  }
  for (const key in value) if (nestsDeeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  return false;
}

const LONG_DIGIT_RUN = new RegExp(`[0-9]{${MAX_INT_DIGITS + 1}}`);

/** json.loads(text) as JavaScript values (NaN and the infinities included); PythonJsonError when Python refuses it. */
export function loadsPythonJson(text: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return scanPythonJson(text, Number);
  }
  // JSON.parse took it; so does Python, unless one of its two limits applies (the scanner then says which, where).
  const mayExceed =
    (text.length > MAX_INT_DIGITS && LONG_DIGIT_RUN.test(text)) || (text.length > MAX_NESTING && nestsDeeperThan(parsed, MAX_NESTING));
  return mayExceed ? scanPythonJson(text, Number) : parsed;
}

/** oslo's jsonutils.loads(body): the bytes as strict UTF-8, then json.loads. */
export function loadsPythonJsonBody(body: Uint8Array): unknown {
  const text = decodeUtf8(body);
  if (text === undefined) throw new PythonJsonError(describeInvalidUtf8(body));
  return loadsPythonJson(text);
}
