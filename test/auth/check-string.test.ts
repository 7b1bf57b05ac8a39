import { describe, expect, it } from "vitest";
import { evaluate, parseCheckString, PolicySyntaxError, type Credentials, type PolicyTarget } from "../../src/auth/check-string.js";

const creds = (over: Partial<Credentials> = {}): Credentials => ({
  user_id: "u1",
  project_id: "p1",
  domain_id: null,
  system_scope: null,
  roles: [],
  ...over,
});

const rules: Record<string, string> = { is_admin: "role:admin", never: "!" };
const allows = (text: string, c: Credentials, target: PolicyTarget = { project_id: "p1", user_id: "u1" }) =>
  evaluate(parseCheckString(text), c, target, (name) => (name in rules ? parseCheckString(rules[name]) : undefined));

describe("oslo.policy check strings", () => {
  it("@ and the empty string allow, ! denies", () => {
    expect(allows("@", creds())).toBe(true);
    expect(allows("", creds())).toBe(true);
    expect(allows("!", creds())).toBe(false);
  });

  it("role: matches case-insensitively", () => {
    expect(allows("role:Admin", creds({ roles: ["admin"] }))).toBe(true);
    expect(allows("role:admin", creds({ roles: ["ADMIN"] }))).toBe(true);
    expect(allows("role:admin", creds({ roles: ["administrator"] }))).toBe(false);
  });

  it("rule: follows a named rule", () => {
    expect(allows("rule:is_admin", creds({ roles: ["admin"] }))).toBe(true);
    expect(allows("rule:is_admin", creds({ roles: ["reader"] }))).toBe(false);
    expect(allows("rule:missing", creds({ roles: ["admin"] }))).toBe(false);
  });

  it("key:%(target)s compares a credential with the target, failing when the target lacks the key", () => {
    expect(allows("project_id:%(project_id)s", creds(), { project_id: "p1" })).toBe(true);
    expect(allows("project_id:%(project_id)s", creds(), { project_id: "p2" })).toBe(false);
    expect(allows("project_id:%(project_id)s", creds(), {})).toBe(false);
    expect(allows("user_id:u1", creds())).toBe(true);
    expect(allows("system_scope:all", creds({ system_scope: "all" }))).toBe(true);
  });

  it("a credential the token lacks never matches, not even a missing target value", () => {
    expect(allows("project_id:%(project_id)s", creds({ project_id: null }), { project_id: null })).toBe(false);
    expect(allows("domain_id:None", creds())).toBe(false);
  });

  it("a quoted kind is a literal compared with the target", () => {
    expect(allows("'p1':%(project_id)s", creds(), { project_id: "p1" })).toBe(true);
    expect(allows("'p1':%(project_id)s", creds(), { project_id: "p9" })).toBe(false);
  });

  it("not binds tighter than and, and tighter than or", () => {
    const admin = creds({ roles: ["admin"] });
    const reader = creds({ roles: ["reader"] });
    // a or b and c  ==  a or (b and c)
    expect(allows("role:admin or role:reader and role:member", admin)).toBe(true);
    expect(allows("role:admin or role:reader and role:member", reader)).toBe(false);
    expect(allows("(role:admin or role:reader) and role:member", admin)).toBe(false);
    expect(allows("not role:admin and role:reader", reader)).toBe(true);
    expect(allows("not role:admin and role:reader", admin)).toBe(false);
    expect(allows("not (role:admin or role:reader)", reader)).toBe(false);
    expect(allows("NOT role:admin", reader)).toBe(true);
  });

  it("parentheses may touch checks and nest", () => {
    const c = creds({ roles: ["reader"] });
    expect(allows("((role:reader and project_id:%(project_id)s)) or role:admin", c)).toBe(true);
    expect(allows("(role:reader) and (role:member)", c)).toBe(false);
    expect(allows("(role:member) or (role:reader)", c)).toBe(true);
  });

  it("rejects what oslo.policy would silently turn into deny", () => {
    for (const bad of [
      "role:admin or",
      "and role:admin",
      "(role:admin",
      "role:admin)",
      "admin",
      "role:",
      "role:admin role:service",
      "project_id:%(project_id",
      "http://example.com/check",
      "not",
      "()",
    ]) {
      expect(() => parseCheckString(bad), bad).toThrow(PolicySyntaxError);
    }
  });
});
