/**
 * Every route family, called by each kind of caller, under both default sets:
 * the handler must ask for its own Placement rule before doing anything else,
 * so a denied caller gets 403 naming that rule (before any lookup or body
 * validation; only a wrong content type comes first), and an allowed one gets past the policy check (whatever the
 * handler answers next for the made-up ids used here).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_OR_SERVICE, API_RULES, type ApiRuleName } from "../../src/auth/policy-defaults.js";
import { newUuid, startHarness, type Harness } from "../support/harness.js";

const rp = newUuid();
const consumer = newUuid();
const project = newUuid();

/** Concrete values for the path parameters in the rules' operations. */
const PATH_VALUES: Record<string, string> = {
  uuid: rp,
  consumer_uuid: consumer,
  name: "CUSTOM_POLICY_TEST",
  resource_class: "VCPU",
};
/** A query some operations need to get past their own validation once allowed. */
const QUERY: Record<string, string> = { "/allocation_candidates": "?resources=VCPU:1", "/allocation_candidates/explain": "?resources=VCPU:1", "/claims": "?resources=VCPU:1" };

/**
 * [method, path, rule] for every operation of the admin-or-service rules, as
 * policy-defaults.ts lists them (the rules with other checks are tested below).
 */
const ROUTES: Array<[string, string, ApiRuleName]> = API_RULES.filter((r) => r.check === ADMIN_OR_SERVICE).flatMap((r) =>
  r.operations.map((operation): [string, string, ApiRuleName] => {
    const [method, template] = operation.split(" ");
    const path = template.replace(/\{(\w+)\}/g, (_, param: string) => PATH_VALUES[param]);
    return [method, `${path}${QUERY[path] ?? ""}`, r.name];
  }),
);

it("covers every API rule: the admin-or-service ones by operation, the two others by their own tests", () => {
  expect(ROUTES).toHaveLength(36);
  const others = API_RULES.filter((r) => r.check !== ADMIN_OR_SERVICE).map((r) => r.name);
  expect(others).toEqual(["placement:usages", "placement:reshaper:reshape"]);
});

interface Caller {
  name: string;
  headers: Record<string, string>;
}
const as = (name: string, roles: string, extra: Record<string, string> = {}): Caller => ({
  name,
  headers: { "x-roles": roles, "x-project-id": project, ...extra },
});
const admin = as("project admin", "admin,member,reader");
const service = as("service", "service");
const member = as("project member", "member,reader");
const reader = as("project reader", "reader");
const nobody = as("no roles", "");
const systemAdmin: Caller = { name: "system admin", headers: { "x-roles": "admin,member,reader", "openstack-system-scope": "all" } };

let legacy: Harness;
let secure: Harness;
beforeAll(async () => {
  [legacy, secure] = await Promise.all([
    startHarness({ config: { PLACEMENT_ENFORCE_NEW_DEFAULTS: false } }),
    startHarness({ config: { PLACEMENT_ENFORCE_NEW_DEFAULTS: true } }),
  ]);
});
afterAll(async () => {
  await Promise.all([legacy.close(), secure.close()]);
});

// Writes carry a JSON content type: Placement checks it before the policy (415 first).
const call = (t: Harness, method: string, path: string, who: Caller) =>
  t.request(method, path, {
    token: "user",
    headers: { ...(method === "PUT" || method === "POST" ? { "content-type": "application/json" } : {}), ...who.headers },
  });

async function expectDenied(t: Harness, method: string, path: string, rule: ApiRuleName, who: Caller) {
  const res = await call(t, method, path, who);
  expect(res.status, `${who.name} ${method} ${path}`).toBe(403);
  expect(res.body.errors[0].detail).toContain(`Policy does not allow ${rule} to be performed.`);
}

async function expectAllowed(t: Harness, method: string, path: string, who: Caller) {
  const res = await call(t, method, path, who);
  expect([401, 403], `${who.name} ${method} ${path}: ${res.text}`).not.toContain(res.status);
  expect(res.status, `${who.name} ${method} ${path}: ${res.text}`).toBeLessThan(500);
}

describe.each([
  ["legacy defaults", () => legacy],
  ["new defaults", () => secure],
])("%s", (_name, harness) => {
  it.each(ROUTES)("%s %s: admin and service only (%s)", async (method, path, rule) => {
    const t = harness();
    await expectAllowed(t, method, path, admin);
    await expectAllowed(t, method, path, service);
    for (const who of [member, reader, nobody, systemAdmin]) await expectDenied(t, method, path, rule, who);
  });

  it("GET /usages: also a reader of the project asked about", async () => {
    const t = harness();
    const path = `/usages?project_id=${project}`;
    for (const who of [admin, service, member, reader]) await expectAllowed(t, "GET", path, who);
    await expectAllowed(t, "GET", `/usages?project_id=${newUuid()}`, admin);
    await expectDenied(t, "GET", `/usages?project_id=${newUuid()}`, "placement:usages", reader);
    await expectDenied(t, "GET", path, "placement:usages", nobody);
    await expectDenied(t, "GET", path, "placement:usages", systemAdmin);
  });
});

describe("POST /reshaper", () => {
  it("is for the service role under new defaults, and admin too under legacy ones", async () => {
    await expectAllowed(secure, "POST", "/reshaper", service);
    await expectDenied(secure, "POST", "/reshaper", "placement:reshaper:reshape", admin);
    await expectAllowed(legacy, "POST", "/reshaper", service);
    await expectAllowed(legacy, "POST", "/reshaper", admin);
    for (const t of [legacy, secure]) {
      for (const who of [member, reader, systemAdmin]) await expectDenied(t, "POST", "/reshaper", "placement:reshaper:reshape", who);
    }
  });
});

describe("the root document", () => {
  it("stays public", async () => {
    expect((await secure.request("GET", "/", { token: null })).status).toBe(200);
  });
});
