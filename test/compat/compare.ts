/**
 * Compares the two answers to one request: status, the headers clients act
 * on, and the body with every number as written. Only what legitimately
 * differs is normalised: request ids, Last-Modified's value (its presence is
 * compared), the listening address in Location, the uuids a server chose
 * (already turned back into symbols by the caller), the order of lists
 * Placement leaves unordered, and jsonschema's schema dump (see below).
 */
import { NumberToken, parseJsonText, type JsonText } from "../../src/http/json-text.js";
import type { Response } from "./request.js";

export interface Difference {
  /** What differs, without the values that vary between occurrences (the grouping key with the label). */
  aspect: string;
  reference: string;
  ours: string;
}

const COMPARED_HEADERS = ["content-type", "vary", "openstack-api-version", "location", "allow", "cache-control"];
const REQUEST_ID = /req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

function header(res: Response, name: string): string {
  const value = res.headers.get(name);
  if (value === null) return "(none)";
  return name === "location" ? value.replace(/^https?:\/\/[^/]+/, "") : value;
}

/**
 * Lists whose order Placement does not define; they are compared as sets.
 * Where Placement's order is defined (the standard resource classes first, in
 * os-resource-classes' order; a provider's links; an error list) it is
 * compared as written.
 *
 * - traits, aggregates: read without ORDER BY, rows written from a Python set.
 * - resource_providers (GET /resource_providers): _get_all_by_filters_from_db
 *   selects over a three-way join with no ORDER BY, so the order is whatever
 *   plan PostgreSQL picks (it changes with the table's size and statistics).
 *   A client cannot rely on it; compared as a set keyed by uuid.
 * - allocation_requests, and the per-request allocations list before 1.12:
 *   built into a Python set of AllocationRequest objects whose hash mixes
 *   provider uuid strings, so their order changes with PYTHONHASHSEED, i.e.
 *   with every start of the reference.
 * - mappings' lists: each is a Python set of provider uuids.
 */
const UNORDERED_NAMES = new Set(["traits", "aggregates"]);
const UNORDERED_RECORDS = new Set(["resource_providers", "allocation_requests", "allocations"]);

/** A sort key for any JSON value: members in name order, numbers as written. */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v) && !(v instanceof NumberToken)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

const sortedBy = (items: JsonText[], key: (v: JsonText) => string): JsonText[] =>
  [...items].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  });

/**
 * jsonschema's message is compared; what follows it in a 400's detail
 * ("Failed validating ... in schema...: <the schema, pretty-printed>") is
 * jsonschema's dump of Placement's own schema objects, not an API contract.
 */
const SCHEMA_DUMP = /^(.*(?:JSON does not validate|Invalid query string parameters): .*?) {2}Failed validating .*$/s;

/**
 * Placement formats some Python sets into its messages with %s (the
 * `same_subtree` suffixes not found, and the suffixes there are): their
 * order follows the hash seed, i.e. changes with every start of the
 * reference. Lists of quoted names in a detail are compared as sets.
 */
const PYTHON_NAME_LIST = /\[(?:'[^']*'(?:, )?)+\]/g;
const sortPythonList = (list: string) => `[${(list.slice(1, -1).match(/'[^']*'/g) ?? []).sort().join(", ")}]`;

/** A provider created without a uuid is named in its 400 by the uuid the server chose for it. */
const CHOSEN_UUID = /(Unable to create resource provider "[^"]*", )[0-9a-f-]{36}/g;

const normaliseDetail = (detail: string) =>
  detail.replace(SCHEMA_DUMP, "$1").replace(PYTHON_NAME_LIST, sortPythonList).replace(CHOSEN_UUID, "$1{chosen}");

function normalise(value: JsonText, key = "", parent = ""): JsonText {
  if (Array.isArray(value)) {
    const items = value.map((v) => normalise(v));
    const names = items.every((v) => typeof v === "string");
    if (names && (UNORDERED_NAMES.has(key) || parent === "mappings")) return [...items].sort();
    if (UNORDERED_RECORDS.has(key) && items.every((v) => v !== null && typeof v === "object")) {
      const uuid = (v: JsonText) => ((v as Record<string, JsonText>).uuid as string | undefined) ?? canonical(v);
      return sortedBy(items, key === "resource_providers" ? uuid : canonical);
    }
    return items;
  }
  if (typeof value === "string" && key === "detail") return normaliseDetail(value);
  if (value && typeof value === "object" && !(value instanceof NumberToken)) {
    return Object.fromEntries(Object.entries(value).filter(([k]) => k !== "request_id").map(([k, v]) => [k, normalise(v, k, key)]));
  }
  return value;
}

const show = (value: JsonText | undefined): string => (value === undefined ? "(absent)" : JSON.stringify(value));

function diffJson(path: string, a: JsonText | undefined, b: JsonText | undefined, out: Difference[]): void {
  if (out.length >= 8) return;
  const kind = (v: JsonText | undefined) =>
    v === undefined ? "absent" : v === null ? "null" : v instanceof NumberToken ? "number" : Array.isArray(v) ? "array" : typeof v;
  if (kind(a) !== kind(b)) {
    out.push({ aspect: `body ${path || "."} kind`, reference: show(a), ours: show(b) });
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) out.push({ aspect: `body ${path}[] length`, reference: show(a), ours: show(b) });
    else
      a.forEach((item, i) => {
        diffJson(`${path}[]`, item, b[i], out);
      });
    return;
  }
  if (a instanceof NumberToken && b instanceof NumberToken) {
    if (a.text !== b.text) out.push({ aspect: `body ${path}${a.text.includes(".") !== b.text.includes(".") ? " number kind" : ""}`, reference: a.text, ours: b.text });
    return;
  }
  if (a && b && typeof a === "object" && typeof b === "object") {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    if (process.env.COMPAT_KEY_ORDER && Object.keys(a).join() !== Object.keys(b).join() && Object.keys(a).sort().join() === Object.keys(b).sort().join()) {
      out.push({ aspect: `body ${path || "."} key order`, reference: Object.keys(a).join(","), ours: Object.keys(b).join(",") });
    }
    for (const key of keys) {
      const x = (a as Record<string, JsonText>)[key];
      const y = (b as Record<string, JsonText>)[key];
      // A member's name is grouped as such unless it is a uuid or symbol (then it is data).
      const name = /^[0-9a-f-]{36}$|^⟦/.test(key) ? "{id}" : /^[A-Z][A-Z0-9_]+$/.test(key) ? "{name}" : key;
      if (x === undefined || y === undefined) out.push({ aspect: `body ${path}.${name} presence`, reference: show(x), ours: show(y) });
      else diffJson(`${path}.${name}`, x, y, out);
    }
    return;
  }
  if (a !== b) out.push({ aspect: `body ${path || "."}`, reference: show(a), ours: show(b) });
}

function parse(text: string): JsonText | undefined {
  try {
    return text ? parseJsonText(text) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The differences between two answers (symbolised texts), empty when they
 * agree; `bodies: false` compares status and headers only (for answers whose
 * bodies are checked another way, see limited.ts).
 */
export function compare(reference: Response, ours: Response, options: { bodies?: boolean } = {}): Difference[] {
  const out: Difference[] = [];
  if (reference.status !== ours.status) {
    out.push({ aspect: `status ${reference.status} vs ${ours.status}`, reference: String(reference.status), ours: String(ours.status) });
  }
  for (const name of COMPARED_HEADERS) {
    const a = header(reference, name);
    const b = header(ours, name);
    if (a !== b) out.push({ aspect: `header ${name}: ${a} vs ${b}`, reference: a, ours: b });
  }
  const lastModified = (res: Response) => (res.headers.has("last-modified") ? "present" : "absent");
  if (lastModified(reference) !== lastModified(ours)) {
    out.push({ aspect: `header last-modified ${lastModified(reference)} vs ${lastModified(ours)}`, reference: lastModified(reference), ours: lastModified(ours) });
  }
  if (out.some((d) => d.aspect.startsWith("status")) || options.bodies === false) return out;
  const a = parse(reference.text);
  const b = parse(ours.text);
  if (a !== undefined && b !== undefined) {
    diffJson("", normalise(a), normalise(b), out);
  } else {
    const plain = (text: string) => text.replace(REQUEST_ID, "req-*").replace(/(JSON does not validate: [^\n]*?)\s+Failed validating[\s\S]*$/, "$1");
    const x = plain(reference.text);
    const y = plain(ours.text);
    if (x !== y) out.push({ aspect: "body text", reference: x.slice(0, 400), ours: y.slice(0, 400) });
  }
  return out;
}
