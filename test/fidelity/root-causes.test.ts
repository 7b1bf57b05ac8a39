/**
 * The divergences from Placement 8.0.0 that the differential test
 * (npm run compat) found, one test per root cause, each asserting what the
 * reference answers.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";
import { expectError, generationOf, makeProvider, putInventories, snapshot } from "../providers/support.js";

let t: Harness;
beforeAll(async () => {
  t = await startHarness();
});
afterAll(async () => t.close());

const detail = (res: { body: any }) => res.body.errors[0].detail as string;

describe("provider traits", () => {
  it("a PUT that changes nothing keeps the generation; a real change bumps it", async () => {
    const rp = await makeProvider(t);
    const set = (traits: string[], generation: number) =>
      t.request("PUT", `/resource_providers/${rp}/traits`, { body: { traits, resource_provider_generation: generation } });
    expect((await set(["HW_CPU_X86_SSE"], 0)).body.resource_provider_generation).toBe(1);
    const noop = await set(["HW_CPU_X86_SSE"], 1);
    expect(noop.status).toBe(200);
    expect(noop.body.resource_provider_generation).toBe(1);
    expect(await generationOf(t, rp)).toBe(1);
    expect((await set([], 1)).body.resource_provider_generation).toBe(2);
  });

  it("a DELETE of no traits keeps the generation", async () => {
    const rp = await makeProvider(t);
    expect((await t.request("DELETE", `/resource_providers/${rp}/traits`)).status).toBe(204);
    expect(await generationOf(t, rp)).toBe(0);
  });

  it("GET for an unknown provider names it twice, with Vary", async () => {
    const uuid = newUuid();
    const res = await t.request("GET", `/resource_providers/${uuid}/traits`);
    expect(res.status).toBe(404);
    expect(detail(res)).toBe(
      `The resource could not be found.\n\n No resource provider with uuid ${uuid} found: No resource provider with uuid ${uuid} found  `,
    );
    expect(res.headers.get("vary")).toBe("openstack-api-version");
  });
});

describe("allocation_ratio", () => {
  // Placement's rule is on the capacity, int((total - reserved) * allocation_ratio): positive before 1.26, not negative from 1.26.
  it("accepts 0 from 1.26 (capacity 0) and refuses it before, in reserved-and-total words", async () => {
    const rp = await makeProvider(t);
    const old = await t.request("PUT", `/resource_providers/${rp}/inventories`, {
      version: "1.17",
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4, allocation_ratio: 0 } } },
    });
    expect(old.status).toBe(400);
    expect(detail(old)).toContain(`Invalid inventory for 'VCPU' on resource provider '${rp}'. The reserved value is greater than or equal to total.`);
    const res = await putInventories(t, rp, { VCPU: { total: 4, allocation_ratio: 0 } });
    expect(res.status).toBe(200);
  });

  it("refuses a capacity truncated to 0 before 1.26 and a negative capacity from 1.26", async () => {
    const rp = await makeProvider(t);
    const half = await t.request("POST", `/resource_providers/${rp}/inventories`, {
      version: "1.17",
      body: { resource_provider_generation: 0, resource_class: "VCPU", total: 4, reserved: 3, allocation_ratio: 0.5 },
    });
    expect(half.status).toBe(400);
    const put = (inventory: object) =>
      t.request("PUT", `/resource_providers/${rp}/inventories`, { body: { resource_provider_generation: 0, inventories: { VCPU: inventory } } });
    const negative = await put({ total: 4, allocation_ratio: -1 });
    expect(negative.status).toBe(400);
    expect(detail(negative)).toContain("The reserved value is greater than total.");
    // Two negatives make a positive capacity, which Placement accepts; reserved above total is refused here all the same.
    const both = await put({ total: 4, reserved: 6, allocation_ratio: -1 });
    expect(both.status, both.text).toBe(400);
    expect(detail(both)).toContain("The reserved value is greater than total.");
  });

  it("is a float on reads (1.0, 16.0, 0.0), and echoed as the client wrote it on writes", async () => {
    const rp = await makeProvider(t);
    const put = await t.request("PUT", `/resource_providers/${rp}/inventories`, {
      body: '{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8, "allocation_ratio": 16}, "DISK_GB": {"total": 9}, "MEMORY_MB": {"total": 9, "allocation_ratio": 0.0}}}',
    });
    expect(put.text).toContain('"VCPU":{"total":8,"reserved":0,"min_unit":1,"max_unit":2147483647,"step_size":1,"allocation_ratio":16}');
    expect(put.text).toContain('"allocation_ratio":1.0}');
    expect(put.text).toContain('"allocation_ratio":0.0}');
    const get = await t.request("GET", `/resource_providers/${rp}/inventories`);
    expect(get.text).toContain('"allocation_ratio":16.0}');
    const one = await t.request("GET", `/resource_providers/${rp}/inventories/DISK_GB`);
    expect(one.text).toContain('"allocation_ratio":1.0,');
  });
});

describe("error details", () => {
  it("are one line after the explanation, as webob's strip_tags leaves them", async () => {
    const res = await t.request("POST", "/resource_classes", { body: { name: "GPU_A" } });
    expect(res.status).toBe(400);
    const [explanation, message, ...rest] = detail(res).split("\n\n");
    expect(explanation).toBe("The server could not comply with the request since it is either malformed or otherwise incorrect.");
    expect(rest).toEqual([]);
    expect(message).toMatch(/^ JSON does not validate: 'GPU_A' does not match '\^CUSTOM_\[A-Z0-9_\]\+\$' {2}Failed validating/);
    expect(message).not.toContain("\n");
  });

  it("405, 406 and 415 use webob's short template", async () => {
    const res = await t.request("PATCH", "/resource_providers");
    expect(detail(res)).toBe("The method PATCH is not allowed for this resource. \n\n The method specified is not allowed for this resource.");
    const old = await t.request("DELETE", `/resource_providers/${newUuid()}/inventories`, { version: "1.4" });
    expect(old.status).toBe(405);
    expect(old.headers.get("allow")).toBeNull();
    expect(detail(old)).toBe("The method DELETE is not allowed for this resource. \n\n ");
  });
});

describe("headers", () => {
  it("Content-Type is compared as written: APPLICATION/JSON is a 415", async () => {
    const res = await t.request("POST", "/resource_providers", {
      body: { name: `rp-${newUuid()}` },
      headers: { "content-type": "APPLICATION/JSON" },
    });
    expect(res.status).toBe(415);
    expect(detail(res)).toBe(
      "The request media type APPLICATION/JSON is not supported by this server. \n\n The media type APPLICATION/JSON is not supported, use application/json",
    );
  });

  it("a bad content type is a 415 before the policy's 403", async () => {
    const rp = await makeProvider(t);
    const res = await t.request("PUT", `/resource_providers/${rp}/traits`, {
      body: { traits: [], resource_provider_generation: 0 },
      headers: { "content-type": "text/plain" },
      token: "someone:proj",
    });
    expect(res.status).toBe(415);
  });

  it("no Vary on errors Placement raises past its handlers; Vary on the ones its handlers answer", async () => {
    const vary = async (method: string, path: string, token?: string) =>
      (await t.request(method, path, { token, body: method === "PUT" ? {} : undefined })).headers.get("vary");
    expect(await vary("GET", `/resource_providers/${newUuid()}`)).toBeNull();
    expect(await vary("GET", "/resource_classes/CUSTOM_NOPE")).toBeNull();
    expect(await vary("GET", "/no/such/route")).toBeNull();
    expect(await vary("GET", "/resource_providers", "someone:proj")).toBeNull();
    expect(await vary("DELETE", `/resource_providers/${newUuid()}`)).toBe("openstack-api-version");
    expect(await vary("GET", "/traits/CUSTOM_NOPE")).toBe("openstack-api-version");
  });

  it("Last-Modified: none on the inventories of a provider without any, none on PUT of a never-updated provider", async () => {
    const root = await makeProvider(t);
    const child = await makeProvider(t, { parent: root });
    const inventories = await t.request("GET", `/resource_providers/${child}/inventories`);
    expect(inventories.headers.get("last-modified")).toBeNull();
    expect(inventories.headers.get("cache-control")).toBe("no-cache");
    const put = await t.request("PUT", `/resource_providers/${child}`, { body: { name: `renamed-${child}` } });
    expect(put.status).toBe(200);
    expect(put.headers.get("last-modified")).toBeNull();
    const again = await t.request("PUT", `/resource_providers/${child}`, { body: { name: `again-${child}` } });
    expect(again.headers.get("last-modified")).toMatch(/GMT$/);
  });

  it("HEAD answered 405 is webob's HTML page", async () => {
    const res = await t.request("HEAD", "/resource_providers");
    expect(res.status).toBe(405);
    expect(res.headers.get("content-type")).toBe("text/html; charset=UTF-8");
  });

  it("the noauth2 401 has webob's own body", async () => {
    const res = await t.request("GET", "/resource_providers", { token: null });
    expect(res.status).toBe(401);
    expect(res.text).toBe(
      '{"message": "This server could not verify that you are authorized to access the document you requested. Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.<br /><br />\\n\\n\\n", "code": "401 Unauthorized", "title": "Unauthorized"}',
    );
    expect(res.headers.get("www-authenticate")).toBeNull();
  });
});

describe("microversion header", () => {
  it("1.-1 and -1.0 are integers outside the list: 406", async () => {
    for (const version of ["1.-1", "-1.0", "1.40"]) {
      const res = await t.request("GET", "/resource_providers", { version });
      expect(res.status, version).toBe(406);
      expect(detail(res)).toContain(`Invalid microversion: Unacceptable version header: ${version}`);
    }
  });

  it("anything else is a 400 worded with Python's error", async () => {
    const cases: Record<string, string> = {
      abc: "invalid version string: abc; invalid literal for int() with base 10: 'abc'",
      "1.2.3": "invalid version string: 1.2.3; invalid literal for int() with base 10: '2.3'",
      "1": "invalid version string: 1; Version.__new__() missing 1 required positional argument: 'minor'",
    };
    for (const [version, message] of Object.entries(cases)) {
      const res = await t.request("GET", "/resource_providers", { version });
      expect(res.status, version).toBe(400);
      expect(detail(res)).toContain(`Invalid microversion: ${message}`);
    }
    expect((await t.request("GET", "/resource_providers", { version: "1.01" })).headers.get("openstack-api-version")).toBe("placement 1.1");
  });
});

describe("provider and aggregate uuids", () => {
  it("a parent written in upper case does not exist, as in Placement", async () => {
    const parent = await makeProvider(t);
    const res = await t.request("POST", "/resource_providers", {
      body: { name: `rp-${newUuid()}`, parent_provider_uuid: parent.toUpperCase() },
    });
    expect(res.status).toBe(400);
    expect(detail(res)).toContain("parent provider UUID does not exist.");
  });

  it("an aggregate as urn:uuid:... or {...} is a 400, never a 500", async () => {
    const rp = await makeProvider(t);
    const agg = newUuid();
    for (const spelling of [`urn:uuid:${agg}`, `{${agg}}`]) {
      const res = await t.request("PUT", `/resource_providers/${rp}/aggregates`, {
        body: { aggregates: [spelling], resource_provider_generation: 0 },
      });
      expect(res.status, spelling).toBe(400);
      expect(detail(res)).toContain(`Invalid aggregate uuid ${spelling}`);
    }
    expect(await generationOf(t, rp)).toBe(0);
  });
});

describe("GET /usages", () => {
  it("a repeated project_id counts by its last value, as webob reads it", async () => {
    const rp = await makeProvider(t);
    await putInventories(t, rp, { VCPU: { total: 8 } });
    const consumer = newUuid();
    const put = await t.request("PUT", `/allocations/${consumer}`, {
      version: "1.28",
      body: { allocations: { [rp]: { resources: { VCPU: 2 } } }, project_id: "usage-last", user_id: "u", consumer_generation: null },
    });
    expect(put.status, put.text).toBe(204);
    const last = await t.request("GET", "/usages?project_id=usage-first&project_id=usage-last", { version: "1.9" });
    expect(last.body).toEqual({ usages: { VCPU: 2 } });
    const first = await t.request("GET", "/usages?project_id=usage-last&project_id=usage-first", { version: "1.9" });
    expect(first.body).toEqual({ usages: {} });
  });
});

describe("HTML error pages, as webob writes them", () => {
  it("escape quotes in the detail as Python's html.escape does", async () => {
    const res = await t.request("GET", "/resource_providers", { version: null, headers: { accept: "text/html", "openstack-api-version": "placement abc" } });
    expect(res.status).toBe(400);
    expect(res.text).toContain("Invalid microversion: invalid version string: abc; invalid literal for int() with base 10: &#x27;abc&#x27;\n");
  });

  it("put the 415's explanation and detail on lines of their own around the breaks", async () => {
    const rp = await makeProvider(t);
    const res = await t.request("PUT", `/resource_providers/${rp}/traits`, {
      body: { traits: [], resource_provider_generation: 0 },
      headers: { accept: "text/html", "content-type": "text/plain" },
    });
    expect(res.status).toBe(415);
    expect(res.text).toContain(
      "  The request media type text/plain is not supported by this server.\n<br /><br />\nThe media type text/plain is not supported, use application/json\n </body>",
    );
  });
});

describe("validation messages, as jsonschema words them", () => {
  it("name unexpected properties in sorted order", async () => {
    const res = await t.request("GET", "/resource_providers?name=x&member_of=in:a3333333-3333-4333-8333-333333333333&foo=bar", { version: "1.1" });
    expect(res.status).toBe(400);
    expect(detail(res)).toContain("Invalid query string parameters: Additional properties are not allowed ('foo', 'member_of' were unexpected)");
  });
});

describe("which check answers first, as Placement's decorators nest", () => {
  it("a GET older than its route is a 404 before an Accept that rules JSON out is a 406", async () => {
    for (const [path, version] of [
      ["/allocation_candidates?resources=VCPU:1", "1.9"],
      ["/resource_classes", "1.1"],
      ["/traits", "1.5"],
      ["/usages?project_id=p", "1.8"],
    ]) {
      const res = await t.request("GET", path, { version, headers: { accept: "text/plain" } });
      expect(res.status, path).toBe(404);
    }
    // GET .../aggregates checks Accept first.
    const rp = await makeProvider(t);
    expect((await t.request("GET", `/resource_providers/${rp}/aggregates`, { version: "1.0", headers: { accept: "text/plain" } })).status).toBe(406);
  });

  it("PUT .../aggregates at 1.0 with a body that is not JSON is a 415 before the 404", async () => {
    const rp = await makeProvider(t);
    const res = await t.request("PUT", `/resource_providers/${rp}/aggregates`, { version: "1.0", body: "[]", headers: { "content-type": "text/plain" } });
    expect(res.status).toBe(415);
  });
});

describe("PUT /allocations: which complaint about a body wins", () => {
  it("from 1.12 an unexpected property before a missing one; before 1.12 the missing one", async () => {
    const consumer = newUuid();
    const at = (version: string) => t.request("PUT", `/allocations/${consumer}`, { version, body: { a: 1 } });
    expect(detail(await at("1.20"))).toContain("JSON does not validate: Additional properties are not allowed ('a' was unexpected)");
    expect(detail(await at("1.38"))).toContain("JSON does not validate: Additional properties are not allowed ('a' was unexpected)");
    expect(detail(await at("1.8"))).toContain("JSON does not validate: 'allocations' is a required property");
    const post = await t.request("POST", "/allocations", { version: "1.13", body: { [consumer]: { a: 1 } } });
    expect(detail(post)).toContain("JSON does not validate: Additional properties are not allowed ('a' was unexpected)");
    const wrongType = await at("1.20").then(() => t.request("PUT", `/allocations/${consumer}`, { version: "1.20", body: [] }));
    expect(detail(wrongType)).toContain("JSON does not validate: [] is not of type 'object'");
  });
});

describe("HTML 406, as webob writes it", () => {
  it("keeps its breaks after a space", async () => {
    const res = await t.request("GET", "/usages?project_id=p", { version: "1.13", headers: { accept: "text/html" } });
    expect(res.status).toBe(406);
    expect(res.text).toContain("(content of type text/html. <br /><br />\nOnly application/json is provided\n </body>");
  });
});

describe("POST /reshaper: which refusal wins", () => {
  // Placement checks consumer generations, then the allocations' providers, before it writes the
  // interim inventories, where an unknown class is found; a body wrong in all three ways gets the 409.
  it("a stale consumer generation, then an unknown provider, then an unknown class; nothing written", async () => {
    const rp = await makeProvider(t);
    await putInventories(t, rp, { VCPU: { total: 8 } });
    const consumer = newUuid();
    const put = await t.request("PUT", `/allocations/${consumer}`, {
      version: "1.30",
      body: { allocations: { [rp]: { resources: { VCPU: 1 } } }, project_id: "p", user_id: "u", consumer_generation: null },
    });
    expect(put.status).toBe(204);
    const before = await snapshot(t);
    const reshape = (generation: number, provider: string) =>
      t.request("POST", "/reshaper", {
        version: "1.30",
        body: {
          inventories: { [rp]: { resource_provider_generation: 2, inventories: { VCPU: { total: 8 }, CUSTOM_NOPE: { total: 4 } } } },
          allocations: { [consumer]: { allocations: { [provider]: { resources: { VCPU: 1 } } }, project_id: "p", user_id: "u", consumer_generation: generation } },
        },
      });
    const missing = newUuid();
    const stale = await reshape(9999, missing);
    expectError(stale, 409, "consumer generation conflict - expected 1 but got 9999", "placement.concurrent_update");
    const unknownProvider = await reshape(1, missing);
    expectError(unknownProvider, 400, `Allocation for resource provider '${missing}' that does not exist.`);
    const unknownClass = await reshape(1, rp);
    expectError(unknownClass, 400, "malformed reshaper data: No such resource class CUSTOM_NOPE.");
    expect(await snapshot(t)).toEqual(before);
  });
});

describe("GET /allocation_candidates naming a class or trait that does not exist", () => {
  // Placement resolves names as its search reaches them: a search that found nothing first answers 200, empty.
  it("is a 400 only when Placement's search gets as far as the name", async () => {
    const rp = await makeProvider(t);
    await putInventories(t, rp, { VCPU: { total: 8 } });
    const aggregate = newUuid();
    // A trait no root has, and an amount no provider of this file's database can give.
    expect((await t.request("PUT", "/traits/CUSTOM_ON_NO_ROOT")).status).toBe(201);
    const candidates = (query: string) => t.request("GET", `/allocation_candidates?${query}`, { version: "1.39" });
    const empty = { allocation_requests: [], provider_summaries: {} };
    const answers = {
      "resources=VCPU:100000000&resources1=NOPE:1": empty,
      [`resources=VCPU:1&member_of=${aggregate}&resources1=NOPE:1`]: empty,
      [`resources=VCPU:1&member_of=${aggregate}&required=CUSTOM_NOPE`]: empty,
      "resources=VCPU:1&root_required=CUSTOM_ON_NO_ROOT&resources1=NOPE:1": empty,
      "resources=VCPU:1&resources1=NOPE:1": "No such resource class NOPE.",
      "resources1=NOPE:1&resources=VCPU:100000000": "No such resource class NOPE.",
      [`resources=NOPE:1&member_of=${aggregate}`]: "No such resource class NOPE.",
      [`resources=VCPU:1&in_tree=${aggregate}&required=CUSTOM_NOPE`]: "No such trait(s): CUSTOM_NOPE.",
      "resources=VCPU:1&root_required=CUSTOM_NOPE&resources1=VCPU:100000000": "No such trait(s): CUSTOM_NOPE.",
    };
    for (const [query, expected] of Object.entries(answers)) {
      const res = await candidates(query);
      if (typeof expected === "string") expectError(res, 400, expected);
      else expect([res.status, res.body], query).toEqual([200, expected]);
    }
  });
});
