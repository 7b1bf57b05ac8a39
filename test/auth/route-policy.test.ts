/**
 * Every route family, called by each kind of caller, under both default sets:
 * the handler must ask for its own Placement rule before doing anything else,
 * so a denied caller gets 403 naming that rule (before any lookup or body
 * validation), and an allowed one gets past the policy check (whatever the
 * handler answers next for the made-up ids used here).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newUuid, startHarness, type Harness } from "../support/harness.js";

const rp = newUuid();
const consumer = newUuid();
const project = newUuid();

/** [method, path, rule] for every policy-guarded operation. */
const ROUTES: Array<[string, string, string]> = [
  ["GET", "/resource_providers", "resource_providers:list"],
  ["POST", "/resource_providers", "resource_providers:create"],
  ["GET", `/resource_providers/${rp}`, "resource_providers:show"],
  ["PUT", `/resource_providers/${rp}`, "resource_providers:update"],
  ["DELETE", `/resource_providers/${rp}`, "resource_providers:delete"],
  ["GET", "/resource_classes", "resource_classes:list"],
  ["POST", "/resource_classes", "resource_classes:create"],
  ["GET", "/resource_classes/CUSTOM_POLICY_TEST", "resource_classes:show"],
  ["PUT", "/resource_classes/CUSTOM_POLICY_TEST", "resource_classes:update"],
  ["DELETE", "/resource_classes/CUSTOM_POLICY_TEST", "resource_classes:delete"],
  ["GET", `/resource_providers/${rp}/inventories`, "resource_providers:inventories:list"],
  ["POST", `/resource_providers/${rp}/inventories`, "resource_providers:inventories:create"],
  ["GET", `/resource_providers/${rp}/inventories/VCPU`, "resource_providers:inventories:show"],
  ["PUT", `/resource_providers/${rp}/inventories`, "resource_providers:inventories:update"],
  ["PUT", `/resource_providers/${rp}/inventories/VCPU`, "resource_providers:inventories:update"],
  ["DELETE", `/resource_providers/${rp}/inventories`, "resource_providers:inventories:delete"],
  ["DELETE", `/resource_providers/${rp}/inventories/VCPU`, "resource_providers:inventories:delete"],
  ["GET", `/resource_providers/${rp}/aggregates`, "resource_providers:aggregates:list"],
  ["PUT", `/resource_providers/${rp}/aggregates`, "resource_providers:aggregates:update"],
  ["GET", `/resource_providers/${rp}/usages`, "resource_providers:usages"],
  ["GET", "/traits", "traits:list"],
  ["GET", "/traits/CUSTOM_POLICY_TEST", "traits:show"],
  ["PUT", "/traits/CUSTOM_POLICY_TEST", "traits:update"],
  ["DELETE", "/traits/CUSTOM_POLICY_TEST", "traits:delete"],
  ["GET", `/resource_providers/${rp}/traits`, "resource_providers:traits:list"],
  ["PUT", `/resource_providers/${rp}/traits`, "resource_providers:traits:update"],
  ["DELETE", `/resource_providers/${rp}/traits`, "resource_providers:traits:delete"],
  ["POST", "/allocations", "allocations:manage"],
  ["GET", `/allocations/${consumer}`, "allocations:list"],
  ["PUT", `/allocations/${consumer}`, "allocations:update"],
  ["DELETE", `/allocations/${consumer}`, "allocations:delete"],
  ["GET", `/resource_providers/${rp}/allocations`, "resource_providers:allocations:list"],
  ["GET", "/allocation_candidates?resources=VCPU:1", "allocation_candidates:list"],
  ["POST", "/claims?resources=VCPU:1", "claims:create"],
  ["GET", "/changes", "changes:list"],
];

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

const call = (t: Harness, method: string, path: string, who: Caller) => t.request(method, path, { token: "user", headers: who.headers });

async function expectDenied(t: Harness, method: string, path: string, rule: string, who: Caller) {
  const res = await call(t, method, path, who);
  expect(res.status, `${who.name} ${method} ${path}`).toBe(403);
  expect(res.body.errors[0].detail).toContain(`Policy does not allow placement:${rule} to be performed.`);
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
    await expectDenied(t, "GET", `/usages?project_id=${newUuid()}`, "usages", reader);
    await expectDenied(t, "GET", path, "usages", nobody);
    await expectDenied(t, "GET", path, "usages", systemAdmin);
  });
});

describe("POST /reshaper", () => {
  it("is for the service role under new defaults, and admin too under legacy ones", async () => {
    await expectAllowed(secure, "POST", "/reshaper", service);
    await expectDenied(secure, "POST", "/reshaper", "reshaper:reshape", admin);
    await expectAllowed(legacy, "POST", "/reshaper", service);
    await expectAllowed(legacy, "POST", "/reshaper", admin);
    for (const t of [legacy, secure]) {
      for (const who of [member, reader, systemAdmin]) await expectDenied(t, "POST", "/reshaper", "reshaper:reshape", who);
    }
  });
});

describe("the root document", () => {
  it("stays public", async () => {
    expect((await secure.request("GET", "/", { token: null })).status).toBe(200);
  });
});
