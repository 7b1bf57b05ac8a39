/**
 * The OpenAPI document (GET /openapi.json, `placement openapi`): valid
 * OpenAPI 3.1 by the specification's own schema, one operation for every
 * route the app registers, each operation's first microversion where the
 * server starts serving it, and real requests and answers of the app on
 * PostgreSQL validated against the operation's schemas for the microversion
 * they were made at (ajv, JSON Schema 2020-12): bodies and query strings the
 * server took are valid by the document, bodies it refused are not, and every
 * answer (errors too) has the shape and status the document says.
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_VERSION, VERSIONS, type VersionString } from "../../src/http/microversion.js";
import { buildOpenApiDocument, MICROVERSION_KEY, requestSchemas, type JsonSchema, type VersionRange } from "../../src/openapi/document.js";
import { OPERATION_SCHEMAS } from "../../src/schemas/index.js";
import { OPERATIONS } from "../../src/openapi/operations.js";
import { newUuid, startHarness, type Harness, type RequestOptions, type TestResponse } from "../support/harness.js";
import { runPlacement } from "../support/cli-process.js";

type Doc = { paths: Record<string, Record<string, JsonSchema>>; components: { schemas: Record<string, JsonSchema> } };

const doc = buildOpenApiDocument() as unknown as Doc;
const ajv = new Ajv2020({ strict: false, allErrors: true });
const index = (v: string) => VERSIONS.indexOf(v as VersionString);
const inRange = (v: string, r: VersionRange) => index(v) >= index(r.min) && index(v) <= index(r.max);

/** The variant of a schema that applies at version `v` (a schema without variants applies throughout). */
function variantAt(schema: JsonSchema, v: string): JsonSchema | undefined {
  const each = (schema.anyOf as JsonSchema[] | undefined)?.some((s) => s[MICROVERSION_KEY]) ? (schema.anyOf as JsonSchema[]) : [schema];
  return each.find((s) => !s[MICROVERSION_KEY] || inRange(v, s[MICROVERSION_KEY] as VersionRange));
}

function validates(schema: JsonSchema, value: unknown): string | undefined {
  const check = ajv.compile(schema);
  return check(value) ? undefined : ajv.errorsText(check.errors);
}

/** The operation of a concrete request path (its template's parameters matched by segment). */
function operationOf(method: string, path: string): JsonSchema | undefined {
  const bare = path.split("?")[0];
  for (const [template, ops] of Object.entries(doc.paths)) {
    const re = new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`);
    if (re.test(bare)) return ops[method.toLowerCase()];
  }
  return undefined;
}

/** Checks each query parameter against the parameters the operation has at version `v`. */
function queryProblems(op: JsonSchema, query: URLSearchParams, v: string): string[] {
  const params = (op.parameters as JsonSchema[]).filter((p) => p.in === "query");
  const named = new Map(params.filter((p) => p.name !== "request_groups").map((p) => [p.name as string, p]));
  const groups = params.find((p) => p.name === "request_groups");
  const patterns = groups ? Object.keys((variantAt(groups.schema as JsonSchema, v)?.patternProperties as object) ?? {}) : [];
  const problems: string[] = [];
  for (const [key, value] of query) {
    const p = named.get(key);
    if (p && inRange(v, p[MICROVERSION_KEY] as VersionRange)) {
      const bad = validates(p.schema as JsonSchema, value);
      if (bad) problems.push(`${key}: ${bad}`);
    } else if (!patterns.some((pattern) => new RegExp(pattern).test(key))) {
      problems.push(`${key} is not a parameter at ${v}`);
    }
  }
  for (const p of named.values()) {
    if (p.required && inRange(v, p[MICROVERSION_KEY] as VersionRange) && !query.has(p.name as string)) problems.push(`${p.name} missing`);
  }
  return problems;
}

interface Sample {
  operationId: string;
  status: number;
  version: string;
}

describe("the OpenAPI document", () => {
  let h: Harness;
  const samples: Sample[] = [];

  /**
   * Sends a request through the real app and checks it against the document:
   * the operation exists at that version, the request is valid by it exactly
   * when the server took it (2xx), and the answer matches the status's schema.
   */
  async function call(method: string, path: string, options: RequestOptions = {}): Promise<TestResponse> {
    const sent = options.version === undefined ? MAX_VERSION : options.version;
    // Without the header a versioned route answers at the oldest version.
    const version = sent ?? VERSIONS[0];
    const res = await h.request(method, path, { ...options, version: sent });
    const op = operationOf(method, path);
    const where = `${method} ${path} at ${version} (${res.status} ${res.text.slice(0, 200)})`;
    if (!op) {
      // A method the path does not have: the 405 in Placement's error document.
      expect(res.status, where).toBe(405);
      expect(validates(doc.components.schemas.Error, res.body), where).toBeUndefined();
      return res;
    }
    const accepted = res.status < 300;
    if (accepted) expect(inRange(version, op![MICROVERSION_KEY] as VersionRange), `${where}: in the operation's range`).toBe(true);
    const query = new URL(path, "http://x").searchParams;
    if (accepted) expect(queryProblems(op!, query, version), `${where}: query`).toEqual([]);
    if (options.body !== undefined && typeof options.body !== "string") {
      const bodySchema = (op!.requestBody as { content: Record<string, { schema: JsonSchema }> }).content["application/json"].schema;
      const variant = variantAt(bodySchema, version);
      if (accepted) expect(validates(variant!, options.body), `${where}: the body is valid by the document`).toBeUndefined();
      else if (res.status === 400 && variant) expect(validates(variant, options.body), `${where}: the refused body is invalid by the document`).toBeDefined();
    }
    const response = (op!.responses as Record<string, { content?: Record<string, { schema: JsonSchema }> }>)[String(res.status)];
    expect(response, `${where}: status listed`).toBeDefined();
    const contentType = res.headers.get("content-type")?.split(";")[0];
    if (res.text.length > 0 && contentType === "application/json") {
      const schema = response.content?.["application/json"]?.schema;
      expect(schema, `${where}: a JSON schema for the answer`).toBeDefined();
      const resolved = schema!.$ref ? doc.components.schemas.Error : variantAt(schema!, version);
      expect(resolved, `${where}: a variant for the version`).toBeDefined();
      expect(validates(resolved!, res.body), `${where}: the answer is valid by the document`).toBeUndefined();
    } else if (res.text.length === 0) {
      expect(response.content?.["application/json"], `${where}: no body, as documented`).toBeUndefined();
    }
    samples.push({ operationId: op!.operationId as string, status: res.status, version });
    return res;
  }

  beforeAll(async () => {
    h = await startHarness({ config: { PLACEMENT_METRICS_ON_API_PORT: true } });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("is a valid OpenAPI 3.1 document, as the server and the CLI print it", async () => {
    const result = await new Validator().validate(doc as unknown as Record<string, unknown>);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    const served = await h.request("GET", "/openapi.json", { token: null, version: null });
    expect(served.status).toBe(200);
    expect(served.body).toEqual(doc);
    const printed = await runPlacement(["openapi"]);
    expect(printed.code).toBe(0);
    expect(JSON.parse(printed.stdout)).toEqual(doc);
  });

  it("has one operation for every route the app serves, and none it does not", () => {
    const served = new Set<string>();
    for (const r of h.app.routes) {
      if (!["GET", "PUT", "POST", "DELETE", "PATCH"].includes(r.method) || r.path === "/*") continue;
      served.add(`${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
    }
    const documented = new Set(OPERATIONS.map((o) => `${o.method} ${o.path}`));
    expect([...documented].sort()).toEqual([...served].sort());
    // Every operation the schemas registry names is one the document has, so none of its tables is left out.
    const named = Object.keys(OPERATION_SCHEMAS).map((key) => key.replace(/^(\w+) /, (_, m: string) => `${m.toLowerCase()} `));
    expect(named.filter((key) => !documented.has(key))).toEqual([]);
  });

  it("starts each operation at the microversion the server starts serving it", async () => {
    const rp = newUuid();
    await h.request("POST", "/resource_providers", { body: { name: `openapi-${rp}`, uuid: rp } });
    const fill = (path: string) =>
      path.replace("{uuid}", rp).replace("{resource_class}", "VCPU").replace("{name}", "CUSTOM_OPENAPI_PROBE").replace("{consumer_uuid}", newUuid());
    const versioned = OPERATIONS.filter((o) => o.since && !o.unversioned);
    expect(versioned.length).toBeGreaterThan(10);
    for (const op of versioned) {
      const before = VERSIONS[index(op.since!) - 1];
      const { query, body } = requestSchemas(op);
      const path = fill(op.path) + (query ? "?resources=VCPU:1&project_id=p" : "");
      const below = await h.request(op.method.toUpperCase(), path, { version: before, body: body ? {} : undefined });
      expect([404, 405], `${op.method} ${op.path} at ${before}`).toContain(below.status);
      const at = await h.request(op.method.toUpperCase(), path, { version: op.since, body: body ? {} : undefined });
      // At its first version the route exists: whatever it answers, it is not the "no such route" answer.
      expect({ status: at.status, text: at.text }, `${op.method} ${op.path} at ${op.since}`).not.toEqual({ status: below.status, text: below.text });
    }
  });

  it("matches real requests and answers across the API", async () => {
    const rp = newUuid();
    const child = newUuid();
    const agg = newUuid();
    const consumer = newUuid();
    const other = newUuid();
    const project = newUuid();
    const user = newUuid();

    await call("GET", "/", { token: null });
    await call("GET", "/openapi.json", { token: null, version: null });
    await call("GET", "/healthcheck", { token: null, version: null });
    await call("GET", "/metrics", { version: null, headers: { accept: "text/plain" } });

    // Providers, at the latest version and at the oldest shapes.
    await call("POST", "/resource_providers", { body: { name: `oa-${rp}`, uuid: rp } });
    await call("POST", "/resource_providers", { body: { name: `oa-${child}`, uuid: child }, version: "1.13" });
    await call("PUT", `/resource_providers/${child}`, { body: { name: `oa-child-${child}`, parent_provider_uuid: rp } });
    await call("POST", "/resource_providers", { body: { name: 7 } });
    await call("GET", `/resource_providers?name=oa-${rp}`);
    await call("GET", `/resource_providers?in_tree=${rp}&required=!CUSTOM_OA`, { version: "1.22" });
    await call("GET", "/resource_providers", { version: "1.0" });
    await call("GET", `/resource_providers?bogus=1`);
    await call("GET", `/resource_providers/${rp}`);
    await call("GET", `/resource_providers/${rp}`, { version: "1.0" });
    await call("GET", `/resource_providers/${newUuid()}`);

    // Inventories.
    const inv = await call("PUT", `/resource_providers/${rp}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 16, allocation_ratio: 2 }, MEMORY_MB: { total: 4096 } } },
    });
    let gen = inv.body.resource_provider_generation as number;
    await call("PUT", `/resource_providers/${rp}/inventories`, { body: { resource_provider_generation: gen, inventories: { VCPU: { total: 0 } } } });
    await call("PUT", `/resource_providers/${rp}/inventories`, { body: { resource_provider_generation: gen + 5, inventories: {} } });
    gen = (await call("POST", `/resource_providers/${rp}/inventories`, { body: { resource_class: "DISK_GB", total: 100 } })).body.resource_provider_generation;
    await call("GET", `/resource_providers/${rp}/inventories`);
    await call("GET", `/resource_providers/${rp}/inventories/DISK_GB`);
    gen = (await call("PUT", `/resource_providers/${rp}/inventories/DISK_GB`, { body: { resource_provider_generation: gen, total: 200, reserved: 10 } })).body
      .resource_provider_generation;
    await call("DELETE", `/resource_providers/${rp}/inventories/DISK_GB`);
    const childGeneration = (await call("GET", `/resource_providers/${child}`)).body.generation;
    await call("PUT", `/resource_providers/${child}/inventories`, {
      body: { resource_provider_generation: childGeneration, inventories: { DISK_GB: { total: 10 } } },
    });
    await call("DELETE", `/resource_providers/${child}/inventories`);

    // Aggregates in both forms, traits, classes.
    await call("PUT", `/resource_providers/${rp}/aggregates`, { body: [agg], version: "1.1" });
    await call("GET", `/resource_providers/${rp}/aggregates`, { version: "1.1" });
    const aggs = await call("GET", `/resource_providers/${rp}/aggregates`);
    await call("PUT", `/resource_providers/${rp}/aggregates`, { body: { aggregates: [agg], resource_provider_generation: aggs.body.resource_provider_generation } });
    await call("PUT", `/resource_providers/${rp}/aggregates`, { body: { aggregates: [agg], resource_provider_generation: 0 } });
    await call("PUT", "/traits/CUSTOM_OA_TRAIT");
    await call("GET", "/traits/CUSTOM_OA_TRAIT");
    await call("GET", "/traits?name=startswith:CUSTOM_OA&associated=false");
    const traits = await call("GET", `/resource_providers/${rp}/traits`);
    await call("PUT", `/resource_providers/${rp}/traits`, {
      body: { traits: ["CUSTOM_OA_TRAIT"], resource_provider_generation: traits.body.resource_provider_generation },
    });
    await call("POST", "/resource_classes", { body: { name: "CUSTOM_OA_CLASS" } });
    await call("POST", "/resource_classes", { body: { name: "lower" } });
    await call("GET", "/resource_classes/CUSTOM_OA_CLASS");
    await call("PUT", "/resource_classes/CUSTOM_OA_RENAMED", { body: { name: "CUSTOM_OA_RENAMED2" }, version: "1.2" });
    await call("PUT", "/resource_classes/CUSTOM_OA_MADE");
    await call("GET", "/resource_classes");

    // Allocations in the list form (1.0), the dict form, by POST, and read back at several versions.
    await call("PUT", `/allocations/${other}`, {
      body: { allocations: [{ resource_provider: { uuid: rp }, resources: { MEMORY_MB: 512 } }] },
      version: "1.0",
    });
    await call("PUT", `/allocations/${consumer}`, {
      body: { allocations: { [rp]: { resources: { VCPU: 2 } } }, project_id: project, user_id: user, consumer_generation: null, consumer_type: "INSTANCE" },
    });
    await call("PUT", `/allocations/${consumer}`, {
      body: { allocations: { [rp]: { resources: { VCPU: 2 } } }, project_id: project, user_id: user, consumer_generation: null, consumer_type: "INSTANCE" },
    });
    await call("PUT", `/allocations/${newUuid()}`, {
      body: { allocations: { [rp]: { resources: { VCPU: 1000 } } }, project_id: project, user_id: user, consumer_generation: null, consumer_type: "INSTANCE" },
    });
    const held = await call("GET", `/allocations/${consumer}`);
    await call("POST", "/allocations", {
      body: {
        [consumer]: {
          allocations: { [rp]: { resources: { VCPU: 3 } } },
          project_id: project,
          user_id: user,
          consumer_generation: held.body.consumer_generation,
          consumer_type: "INSTANCE",
        },
      },
    });
    for (const version of ["1.0", "1.12", "1.28", MAX_VERSION]) await call("GET", `/allocations/${consumer}`, { version });
    await call("GET", `/allocations/${newUuid()}`);
    await call("GET", `/resource_providers/${rp}/allocations`);
    await call("GET", `/resource_providers/${rp}/allocations`, { version: "1.0" });
    await call("GET", `/resource_providers/${rp}/usages`);
    await call("GET", `/usages?project_id=${project}&consumer_type=INSTANCE`);
    await call("GET", `/usages?project_id=${project}`, { version: "1.9" });
    await call("GET", "/usages");

    // Allocation candidates at each shape, granular groups, a claim, the change feed.
    for (const version of ["1.10", "1.12", "1.17", "1.29", MAX_VERSION]) await call("GET", "/allocation_candidates?resources=VCPU:1,MEMORY_MB:128", { version });
    await call("GET", "/allocation_candidates?resources1=VCPU:1&resources2=MEMORY_MB:64&group_policy=none&root_required=!CUSTOM_NONE");
    await call("GET", "/allocation_candidates?resources=VCPU:1&limit=0");
    await call("GET", `/allocation_candidates/explain?resources=VCPU:1,MEMORY_MB:128&required=!CUSTOM_NONE&member_of=${agg}&limit=1`);
    const claimed = await call("POST", "/claims?resources=VCPU:1", { body: { consumers: [{ consumer_uuid: newUuid(), project_id: project, user_id: user }], alternates: 1 } });
    expect(claimed.body.claims).toHaveLength(1);
    await call("GET", "/changes");
    await call("GET", "/changes?since=0&limit=5");
    await call("GET", "/changes?since=x");

    // Reshaper: the same inventories moved back under the generation, the allocations kept.
    const now = await call("GET", `/resource_providers/${rp}/inventories`);
    await call("POST", "/reshaper", {
      body: {
        inventories: { [rp]: { resource_provider_generation: now.body.resource_provider_generation, inventories: now.body.inventories } },
        allocations: {},
      },
    });

    // Deletes and the errors of deletes.
    await call("DELETE", `/allocations/${consumer}`);
    await call("DELETE", `/allocations/${consumer}`);
    await call("DELETE", `/resource_providers/${rp}/traits`);
    await call("DELETE", "/traits/CUSTOM_OA_TRAIT");
    await call("DELETE", "/resource_classes/CUSTOM_OA_CLASS");
    await call("DELETE", `/resource_providers/${rp}`);
    await call("DELETE", `/resource_providers/${child}`);
    await call("POST", "/resource_providers", { body: "not json" });
    await call("PATCH", `/resource_providers/${rp}`);

    // Every operation was sampled, most at more than one status.
    const sampled = new Set(samples.map((s) => s.operationId));
    const all = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((o) => o.operationId as string));
    expect(all.filter((id) => !sampled.has(id))).toEqual([]);
    expect([...new Set(samples.map((s) => s.status))].sort()).toEqual([200, 201, 204, 400, 404, 409]);
  });
});
