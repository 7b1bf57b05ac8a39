import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Identity } from "../../src/auth/identity.js";
import { API_RULES, EXTENSION_RULES } from "../../src/auth/policy-defaults.js";
import { buildPolicyEnforcer, createPolicyEnforcer, PolicyFileError, readPolicyFile } from "../../src/auth/policy.js";
import { testConfig } from "../../src/config.js";

const caller = (roles: string[], projectId: string | null = "p1", systemScope: string | null = null): Identity => ({
  userId: "u1",
  projectId,
  roles,
  systemScope,
  domainId: null,
});

const admin = caller(["admin", "member", "reader"]);
const service = caller(["service"]);
const member = caller(["member", "reader"]);
const reader = caller(["reader"]);
const systemAdmin = caller(["admin", "member", "reader"], null, "all");

const legacy = buildPolicyEnforcer({ enforceNewDefaults: false });
const secure = buildPolicyEnforcer({ enforceNewDefaults: true });
const ownProject = { project_id: "p1", user_id: "u1" };

const ordinaryRules = API_RULES.map((r) => r.name).filter((n) => n !== "placement:reshaper:reshape" && n !== "placement:usages");

describe("Placement's default policy", () => {
  it("registers every rule name Placement has", () => {
    const placementRules = API_RULES.filter((r) => !EXTENSION_RULES.has(r.name));
    expect(placementRules).toHaveLength(33);
    expect(new Set(placementRules.map((r) => r.name)).size).toBe(33);
  });

  it.each(ordinaryRules)("%s: admin or service, never member or reader", (rule) => {
    for (const enforcer of [legacy, secure]) {
      expect(enforcer.allows(rule, admin, ownProject)).toBe(true);
      expect(enforcer.allows(rule, service, ownProject)).toBe(true);
      expect(enforcer.allows(rule, member, ownProject)).toBe(false);
      expect(enforcer.allows(rule, reader, ownProject)).toBe(false);
      expect(enforcer.allows(rule, caller([]), ownProject)).toBe(false);
    }
  });

  it("reshaper: service only under new defaults; admin too while deprecated defaults apply", () => {
    const rule = "placement:reshaper:reshape";
    expect(secure.allows(rule, service, ownProject)).toBe(true);
    expect(secure.allows(rule, admin, ownProject)).toBe(false);
    expect(legacy.allows(rule, service, ownProject)).toBe(true);
    expect(legacy.allows(rule, admin, ownProject)).toBe(true);
    expect(legacy.allows(rule, member, ownProject)).toBe(false);
  });

  it("GET /usages: a reader of the project asked about, or admin or service", () => {
    const rule = "placement:usages";
    for (const enforcer of [legacy, secure]) {
      expect(enforcer.allows(rule, reader, { project_id: "p1" })).toBe(true);
      expect(enforcer.allows(rule, member, { project_id: "p1" })).toBe(true);
      expect(enforcer.allows(rule, reader, { project_id: "other" })).toBe(false);
      expect(enforcer.allows(rule, caller(["member"]), { project_id: "p1" })).toBe(false);
      expect(enforcer.allows(rule, admin, { project_id: "other" })).toBe(true);
      expect(enforcer.allows(rule, service, { project_id: "other" })).toBe(true);
    }
  });

  it("refuses system-scoped and project-less callers whatever their roles", () => {
    for (const enforcer of [legacy, secure]) {
      expect(enforcer.allows("placement:resource_providers:list", systemAdmin, ownProject)).toBe(false);
      expect(enforcer.allows("placement:usages", caller(["reader"], null, "all"), { project_id: "p1" })).toBe(false);
      expect(enforcer.allows("placement:resource_providers:list", caller(["admin"], null), ownProject)).toBe(false);
    }
  });

  it("fails loudly for a rule nobody registered", () => {
    expect(() => secure.allows("placement:nonsense", admin, ownProject)).toThrow(/not registered/);
  });
});

describe("policy overrides", () => {
  it("replace single rules, leaving the others at their defaults", () => {
    const open = buildPolicyEnforcer({ enforceNewDefaults: false, overrides: { "placement:resource_providers:list": "@" } });
    expect(open.allows("placement:resource_providers:list", caller([]), ownProject)).toBe(true);
    expect(open.allows("placement:resource_providers:create", caller([]), ownProject)).toBe(false);
  });

  it("an overridden base rule drops its deprecated admin fallback", () => {
    const serviceOnly = buildPolicyEnforcer({ enforceNewDefaults: false, overrides: { service_api: "role:service" } });
    expect(serviceOnly.allows("placement:reshaper:reshape", admin, ownProject)).toBe(false);
    expect(serviceOnly.allows("placement:reshaper:reshape", service, ownProject)).toBe(true);
  });

  it("may define helper rules that other rules use", () => {
    const e = buildPolicyEnforcer({
      enforceNewDefaults: true,
      overrides: { cloud_operator: "role:operator", "placement:traits:list": "rule:cloud_operator or rule:admin_or_service_api" },
    });
    expect(e.allows("placement:traits:list", caller(["operator"]), ownProject)).toBe(true);
    expect(e.allows("placement:traits:show", caller(["operator"]), ownProject)).toBe(false);
  });

  it.each([
    [{ "placement:resource_provider:list": "@" }, /unknown rule "placement:resource_provider:list"/],
    [{ unused_helper: "role:x" }, /unknown rule "unused_helper"/],
    [{ "placement:traits:list": "role:admin or" }, /rule "placement:traits:list": cannot parse/],
    [{ "placement:traits:list": "rule:nowhere" }, /refers to undefined rule "nowhere"/],
    [{ a: "rule:b", b: "rule:a", "placement:traits:list": "rule:a" }, /loop/],
  ])("stop start-up on mistakes: %j", (overrides, message) => {
    expect(() => buildPolicyEnforcer({ enforceNewDefaults: false, overrides })).toThrow(PolicyFileError);
    expect(() => buildPolicyEnforcer({ enforceNewDefaults: false, overrides })).toThrow(message);
  });
});

describe("policy files", () => {
  const dir = mkdtempSync(join(tmpdir(), "placement-policy-"));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  it("reads YAML, as oslo.policy writes it", () => {
    const path = file("policy.yaml", '# operators\n"placement:traits:list": "role:reader"\nplacement:usages: "!"\n');
    const e = createPolicyEnforcer(testConfig({ PLACEMENT_POLICY_FILE: path, PLACEMENT_ENFORCE_NEW_DEFAULTS: true }));
    expect(e.allows("placement:traits:list", reader, ownProject)).toBe(true);
    expect(e.allows("placement:usages", admin, ownProject)).toBe(false);
  });

  it("accepts the example of docs/security.md", () => {
    const path = file(
      "readme.yaml",
      [
        '"placement:reshaper:reshape": "role:service"',
        '"monitoring": "role:monitoring and project_id:%(project_id)s"',
        '"placement:resource_providers:list": "rule:admin_or_service_api or rule:monitoring"',
        '"placement:usages": "rule:project_reader_or_admin_or_service_api or rule:monitoring"',
      ].join("\n"),
    );
    const e = createPolicyEnforcer(testConfig({ PLACEMENT_POLICY_FILE: path }));
    expect(e.allows("placement:reshaper:reshape", admin, ownProject)).toBe(false);
    expect(e.allows("placement:resource_providers:list", caller(["monitoring"]), ownProject)).toBe(true);
    expect(e.allows("placement:usages", caller(["monitoring"]), { project_id: "other" })).toBe(false);
  });

  it("reads JSON", () => {
    const path = file("policy.json", '{"placement:traits:list": "role:reader"}');
    expect(createPolicyEnforcer(testConfig({ PLACEMENT_POLICY_FILE: path })).allows("placement:traits:list", reader, ownProject)).toBe(true);
  });

  it("treats an empty file as no overrides", () => {
    expect(readPolicyFile(file("empty.yaml", "# nothing\n"))).toEqual({});
  });

  it("names the file and the problem when it cannot be used", () => {
    expect(() => readPolicyFile(join(dir, "missing.yaml"))).toThrow(/cannot read policy file .*missing\.yaml/);
    expect(() => readPolicyFile(file("bad.yaml", "a: [unclosed\n"))).toThrow(/is not valid YAML/);
    expect(() => readPolicyFile(file("bad.json", "{"))).toThrow(/is not valid JSON/);
    expect(() => readPolicyFile(file("list.yaml", "- role:admin\n"))).toThrow(/must map rule names to check strings/);
    expect(() => readPolicyFile(file("number.yaml", '"placement:traits:list": 3\n'))).toThrow(/must be a check string/);
    const typo = file("typo.yaml", '"placement:trait:list": "@"\n');
    expect(() => createPolicyEnforcer(testConfig({ PLACEMENT_POLICY_FILE: typo }))).toThrow(`policy file ${typo}: unknown rule "placement:trait:list"`);
  });
});
