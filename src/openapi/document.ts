/**
 * The OpenAPI 3.1 document, generated from the operations list and the zod
 * schemas the routes validate with (src/schemas' registry; z.toJSONSchema,
 * draft 2020-12, which is OpenAPI 3.1's dialect). Each operation carries `x-openstack-microversion`
 * ({min, max}); a body, query string or response that changes with the
 * microversion is an `anyOf` of its variants, each with the range it applies to.
 */
import { z } from "zod";
import { statusTitle } from "../http/errors.js";
import { MAX_VERSION, MIN_VERSION, VERSIONS, type VersionString } from "../http/microversion.js";
import { OPERATION_SCHEMAS, type OperationSchemas, type Versioned } from "../schemas/index.js";
import { OPERATIONS, type Operation, type VersionTable } from "./operations.js";
import { PLACEMENT_ERROR, WEBOB_ERROR } from "./responses.js";

export type JsonSchema = Record<string, unknown>;
export const MICROVERSION_KEY = "x-openstack-microversion";

export interface VersionRange {
  min: VersionString;
  max: VersionString;
}

const previous = (v: VersionString): VersionString => VERSIONS[VERSIONS.indexOf(v) - 1];

/** The ranges of a version table: each entry until the one before the next entry's version. */
export function rangesOf(table: VersionTable, last: VersionString = MAX_VERSION): Array<VersionRange & { schema: z.ZodType }> {
  const ranges = table.map(([min, schema], i) => ({ min, max: i + 1 < table.length ? previous(table[i + 1][0]) : last, schema }));
  // A null entry ends the table: from its version there is no such body.
  return ranges.filter((r): r is VersionRange & { schema: z.ZodType } => r.schema !== null);
}

/**
 * zod's JSON Schema of what a client sends (`io: "input"`). A refinement
 * before a pipe (zInteger: "integer" in jsonschema's wording) renders as
 * `{}`; the schema after the pipe is what it accepts, so that is rendered.
 */
export function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const out = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io: "input",
    unrepresentable: "any",
    override: (ctx) => {
      const def = (ctx.zodSchema as unknown as { _zod: { def: { type: string; in?: z.ZodType; out?: z.ZodType } } })._zod.def;
      if (def.type === "pipe" && def.in && def.out && (def.in as unknown as { _zod: { def: { type: string } } })._zod.def.type === "unknown") {
        Object.assign(ctx.jsonSchema, jsonSchemaOf(def.out));
      }
    },
  }) as JsonSchema;
  delete out.$schema;
  return out;
}

function variants(table: VersionTable, operationRange: VersionRange): JsonSchema {
  const ranges = rangesOf(table, operationRange.max);
  const each = ranges.map(({ min, max, schema }) => ({ ...jsonSchemaOf(schema), [MICROVERSION_KEY]: { min, max } }));
  return each.length === 1 ? each[0] : { anyOf: each };
}

/** A registry table as a version table: its `until` is an entry with no schema. */
export function tableOf(v: Versioned): VersionTable {
  const entries: Array<readonly [VersionString, z.ZodType | null]> = v.entries.map((e) => [e.from, e.schema] as const);
  if (v.until) entries.push([v.until, null]);
  return entries;
}

/** What the registry says a request of this operation carries. */
export function requestSchemas(op: Pick<Operation, "method" | "path">): OperationSchemas {
  return OPERATION_SCHEMAS[`${op.method.toUpperCase()} ${op.path}`] ?? {};
}

export function operationRange(op: Operation): VersionRange {
  return { min: op.since ?? MIN_VERSION, max: MAX_VERSION };
}

const VERSION_HEADER = {
  name: "OpenStack-API-Version",
  in: "header",
  required: false,
  description: `The microversion, as "placement 1.N" or "placement latest"; ${MIN_VERSION} when absent.`,
  schema: { type: "string", examples: [`placement ${MAX_VERSION}`] },
};

/**
 * One query parameter per property a variant names, with the range in which
 * some variant has it; keys a variant allows by pattern (request groups with
 * a suffix) are one free-form parameter whose schema carries those patterns.
 */
function queryParameters(table: VersionTable, range: VersionRange): JsonSchema[] {
  const byName = new Map<string, { schema: JsonSchema; min: VersionString; max: VersionString; required: boolean }>();
  const patterned: JsonSchema[] = [];
  for (const v of rangesOf(table, range.max)) {
    const js = jsonSchemaOf(v.schema);
    const required = new Set((js.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries((js.properties as Record<string, JsonSchema>) ?? {})) {
      const seen = byName.get(name);
      if (seen) seen.max = v.max;
      else byName.set(name, { schema, min: v.min, max: v.max, required: required.has(name) });
    }
    if (js.patternProperties) patterned.push({ type: "object", patternProperties: js.patternProperties, [MICROVERSION_KEY]: { min: v.min, max: v.max } });
  }
  const params: JsonSchema[] = [...byName].map(([name, p]) => ({
    name,
    in: "query",
    required: p.required,
    schema: p.schema,
    [MICROVERSION_KEY]: { min: p.min, max: p.max },
  }));
  if (patterned.length > 0) {
    params.push({
      name: "request_groups",
      in: "query",
      description:
        "From 1.25: the request groups, resources, required, member_of (and in_tree from 1.31), unsuffixed or with the microversion's suffix (resources1, resources_ACCEL from 1.33).",
      style: "form",
      explode: true,
      schema: patterned.length === 1 ? patterned[0] : { anyOf: patterned },
    });
  }
  return params;
}

/** Path parameters are strings; where the route checks one with a schema (a custom trait's name), that schema, from its version. */
function pathParameters(path: string, table: Versioned | undefined, range: VersionRange): JsonSchema[] {
  const checked = table ? rangesOf(tableOf(table), range.max) : [];
  return [...path.matchAll(/\{([^}]+)\}/g)].map((m) => {
    const name = m[1];
    const each = checked.flatMap((v) => {
      const property = (jsonSchemaOf(v.schema).properties as Record<string, JsonSchema> | undefined)?.[name];
      return property ? [{ ...property, [MICROVERSION_KEY]: { min: v.min, max: v.max } }] : [];
    });
    return { name, in: "path", required: true, schema: each.length > 0 ? { anyOf: [...each, { type: "string" }] } : { type: "string" } };
  });
}

const ERROR_REF = { $ref: "#/components/schemas/Error" };

function operationObject(op: Operation): JsonSchema {
  const range = operationRange(op);
  const request = requestSchemas(op);
  const parameters = [...pathParameters(op.path, request.path, range), ...(request.query ? queryParameters(tableOf(request.query), range) : [])];
  if (!op.unversioned) parameters.push(VERSION_HEADER);
  const responses: Record<string, JsonSchema> = {};
  for (const [status, spec] of Object.entries(op.responses)) {
    const content: Record<string, JsonSchema> = {};
    if (spec.text) content[spec.text] = { schema: spec.text === "application/json" ? { type: "object" } : { type: "string" } };
    if (spec.json) content["application/json"] = { schema: variants(spec.json, range) };
    responses[status] = { description: spec.description, ...(Object.keys(content).length > 0 ? { content } : {}) };
  }
  for (const status of op.errors) {
    responses[String(status)] ??= { description: statusTitle(status), content: { "application/json": { schema: ERROR_REF } } };
  }
  return {
    operationId: op.method + op.path.split(/[/_.{}]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join(""),
    summary: op.summary,
    [MICROVERSION_KEY]: range,
    ...(op.extension ? { "x-extension": true } : {}),
    ...(op.public ? { security: [] } : {}),
    parameters,
    ...(request.body ? { requestBody: { required: !request.body.until, content: { "application/json": { schema: variants(tableOf(request.body), range) } } } } : {}),
    responses,
  };
}

/** The whole document. Built once per app (the routes and the CLI each call it once). */
export function buildOpenApiDocument(): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const op of OPERATIONS) {
    paths[op.path] ??= {};
    paths[op.path][op.method] = operationObject(op);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "OpenStack Placement API (placement-server)",
      version: MAX_VERSION,
      description:
        `Microversions ${MIN_VERSION} to ${MAX_VERSION}. Each operation's ${MICROVERSION_KEY} says the range it exists in; ` +
        "a body, query or response that changes with the microversion is an anyOf of variants, each with its own range. " +
        "Errors are Placement's error document (a code from 1.23), or webob's for an error without detail.",
    },
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    components: {
      securitySchemes: { keystone: { type: "apiKey", in: "header", name: "X-Auth-Token", description: "A Keystone token." } },
      schemas: { Error: { anyOf: [jsonSchemaOf(PLACEMENT_ERROR), jsonSchemaOf(WEBOB_ERROR)] } },
    },
    security: [{ keystone: [] }],
    paths,
  };
}
