/**
 * Request body validation with zod, reported the way Placement reports
 * JSON-Schema failures ("JSON does not validate: 0 is less than the minimum of
 * 1 ... Failed validating 'minimum' in schema..."). Clients and the
 * conformance tests match on those phrases, so each zod issue is translated
 * into the jsonschema wording for the same rule. Bodies are validated here;
 * query strings by query/query-string.ts's validateQuery, with the same
 * wording behind Placement's other prefix. The schemas are in src/schemas/.
 */
import type { z } from "zod";
import { badRequest } from "./errors.js";
import { NumberToken } from "./json-text.js";
import { pythonFloatRepr } from "./python-float.js";

/** Python's repr() of a JSON value, as jsonschema prints instances. */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : pyFloat(value);
  if (value instanceof NumberToken) return pyNumberLiteral(value.text);
  if (typeof value === "string") return pyString(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${pyString(k)}: ${pyRepr(v)}`);
    return `{${entries.join(", ")}}`;
  }
  return String(value);
}

function pyFloat(n: number): string {
  if (!Number.isFinite(n)) return Number.isNaN(n) ? "nan" : n > 0 ? "inf" : "-inf";
  return pythonFloatRepr(n);
}

/** A number as Python's json read it: an int keeps every digit ("-0" is 0), anything else is a float ("0.0", "inf"). */
function pyNumberLiteral(literal: string): string {
  return /^-?[0-9]+$/.test(literal) ? BigInt(literal).toString() : pyFloat(Number(literal));
}

/** What Python's str.isprintable() calls not printable (a space is printable), which repr() escapes. */
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/gu;
const NAMED_ESCAPES: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t", " ": " " };

function pyEscape(char: string): string {
  const named = NAMED_ESCAPES[char];
  if (named !== undefined) return named;
  const code = char.codePointAt(0)!;
  const [prefix, width] = code < 0x100 ? ["x", 2] : code < 0x10000 ? ["u", 4] : ["U", 8];
  return `\\${prefix}${code.toString(16).padStart(width, "0")}`;
}

/** Python's repr() of a str: quotes as Python picks them, lone surrogates and other unprintable characters escaped. */
function pyString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  const escaped = s.replace(/\\/g, "\\\\").replace(NON_PRINTABLE, pyEscape);
  return quote + (quote === "'" ? escaped.replace(/'/g, "\\'") : escaped) + quote;
}

const JSON_TYPE: Record<string, string> = {
  int: "integer",
  number: "number",
  string: "string",
  object: "object",
  record: "object",
  array: "array",
  tuple: "array",
  boolean: "boolean",
  null: "null",
  nan: "number",
};

interface Translated {
  message: string;
  validator: string;
  /** Path of the instance the rule applies to (for `required`, the parent object). */
  path: PropertyKey[];
}

type Issue = z.core.$ZodIssue & { input?: unknown };

/** Maps one zod issue to jsonschema's message and validator name. */
export function translateIssue(issue: Issue): Translated {
  const input = issue.input;
  const path = issue.path;
  switch (issue.code) {
    case "invalid_type": {
      if (input === undefined && path.length > 0) {
        return {
          message: `${pyRepr(String(path[path.length - 1]))} is a required property`,
          validator: "required",
          path: path.slice(0, -1),
        };
      }
      return { message: `${pyRepr(input)} is not of type ${pyRepr(JSON_TYPE[issue.expected] ?? issue.expected)}`, validator: "type", path };
    }
    case "too_small": {
      if (issue.origin === "number" || issue.origin === "int" || issue.origin === "bigint") {
        const exclusive = issue.inclusive === false;
        return {
          message: exclusive
            ? `${pyRepr(input)} is less than or equal to the minimum of ${String(issue.minimum)}`
            : `${pyRepr(input)} is less than the minimum of ${String(issue.minimum)}`,
          validator: exclusive ? "exclusiveMinimum" : "minimum",
          path,
        };
      }
      if (issue.origin === "string") return { message: `${pyRepr(input)} is too short`, validator: "minLength", path };
      if (issue.origin === "array" || issue.origin === "set")
        return { message: `${pyRepr(input)} is too short`, validator: "minItems", path };
      return { message: `${pyRepr(input)} does not have enough properties`, validator: "minProperties", path };
    }
    case "too_big": {
      if (issue.origin === "number" || issue.origin === "int" || issue.origin === "bigint") {
        return { message: `${pyRepr(input)} is greater than the maximum of ${String(issue.maximum)}`, validator: "maximum", path };
      }
      if (issue.origin === "string") return { message: `${pyRepr(input)} is too long`, validator: "maxLength", path };
      if (issue.origin === "array" || issue.origin === "set")
        return { message: `${pyRepr(input)} is too long`, validator: "maxItems", path };
      return { message: `${pyRepr(input)} has too many properties`, validator: "maxProperties", path };
    }
    case "invalid_format": {
      if (issue.format === "regex" && "pattern" in issue && issue.pattern) {
        return { message: `${pyRepr(input)} does not match ${pyRepr(stripSlashes(String(issue.pattern)))}`, validator: "pattern", path };
      }
      return { message: `${pyRepr(input)} is not a ${pyRepr(issue.format)}`, validator: "format", path };
    }
    case "unrecognized_keys": {
      // jsonschema's extras_msg sorts the names.
      const keys = [...issue.keys].sort().map(pyRepr).join(", ");
      return {
        message: `Additional properties are not allowed (${keys} ${issue.keys.length === 1 ? "was" : "were"} unexpected)`,
        validator: "additionalProperties",
        path,
      };
    }
    case "invalid_key": {
      const key = path[path.length - 1];
      const pattern = issue.issues.find((i) => i.code === "invalid_format" && "pattern" in i) as
        | { pattern?: string | RegExp }
        | undefined;
      return {
        message: `${pyRepr(String(key))} does not match any of the regexes: ${pyRepr(stripSlashes(String(pattern?.pattern ?? "")))}`,
        validator: "additionalProperties",
        path: path.slice(0, -1),
      };
    }
    case "invalid_value":
      return { message: `${pyRepr(input)} is not one of ${pyRepr(issue.values)}`, validator: "enum", path };
    case "invalid_union":
      return { message: `${pyRepr(input)} is not valid under any of the given schemas`, validator: "anyOf", path };
    case "not_multiple_of":
      return { message: `${pyRepr(input)} is not a multiple of ${String(issue.divisor)}`, validator: "multipleOf", path };
    case "custom": {
      const params = (issue.params ?? {}) as { validator?: string; types?: string[] };
      // A list of types ("integer", "null") is printed from the input, which may be the number as written.
      if (params.types) return { message: `${pyRepr(input)} is not of type ${params.types.map(pyRepr).join(", ")}`, validator: "type", path };
      return { message: issue.message, validator: params.validator ?? "custom", path };
    }
    default:
      return { message: issue.message, validator: issue.code, path };
  }
}

function stripSlashes(pattern: string): string {
  const m = /^\/(.*)\/[a-z]*$/s.exec(pattern);
  return m ? m[1] : pattern;
}

function schemaPath(path: PropertyKey[]): string {
  return path.map((p) => (typeof p === "number" ? "['items']" : `['properties'][${pyRepr(String(p))}]`)).join("");
}

function instancePath(path: PropertyKey[]): string {
  return path.map((p) => `[${typeof p === "number" ? p : pyRepr(String(p))}]`).join("");
}

const memberAt = (root: unknown, path: readonly PropertyKey[]): unknown =>
  path.reduce<unknown>(
    (acc, key) => (acc !== null && typeof acc === "object" && !(acc instanceof NumberToken) ? (acc as Record<PropertyKey, unknown>)[key] : undefined),
    root,
  );

/** Renders an issue the way str(jsonschema.ValidationError) does. */
export function describeIssue(issue: Issue, root: unknown): string {
  const t = translateIssue(issue);
  const instance = memberAt(root, t.path);
  return `${t.message}\n\nFailed validating ${pyRepr(t.validator)} in schema${schemaPath(t.path)}\n\nOn instance${instancePath(t.path)}:\n    ${pyRepr(instance)}`;
}

/**
 * The issue jsonschema's best_match reports (Placement shows only that one):
 * the shallowest; among equals a value of the wrong type before any other
 * complaint; then the first. A missing property is reported by jsonschema at
 * the object that lacks it, one level above zod's path.
 */
export function bestMatch(issues: readonly z.core.$ZodIssue[]): Issue {
  const missing = (i: z.core.$ZodIssue) => i.code === "invalid_type" && i.input === undefined;
  const depth = (i: z.core.$ZodIssue) => i.path.length - (missing(i) ? 1 : 0);
  const wrongType = (i: z.core.$ZodIssue) => (i.code === "invalid_type" && !missing(i) ? 1 : 0);
  const better = (a: z.core.$ZodIssue, b: z.core.$ZodIssue) => depth(a) < depth(b) || (depth(a) === depth(b) && wrongType(a) > wrongType(b));
  return issues.reduce((best, i) => (better(i, best) ? i : best)) as Issue;
}

/**
 * Validates a parsed JSON body; a failure is a 400 in Placement's wording.
 * `asWritten` gives the same body with its numbers as written (json-text.ts),
 * so the message shows them as Python does: 0.0 is not 0 there, and a large
 * integer keeps its digits.
 */
export function validateBody<S extends z.ZodType>(schema: S, body: unknown, asWritten?: () => unknown): z.output<S> {
  const result = schema.safeParse(body, { reportInput: true });
  if (result.success) return result.data;
  const issue = bestMatch(result.error.issues);
  if (!asWritten) throw badRequest(`JSON does not validate: ${describeIssue(issue, body)}`);
  const written = asWritten();
  const input = memberAt(written, issue.path);
  throw badRequest(`JSON does not validate: ${describeIssue(input === undefined ? issue : ({ ...issue, input } as Issue), written)}`);
}
