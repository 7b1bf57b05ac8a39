/**
 * Authorization: handlers call `authorize(c, "placement:...")` before doing
 * anything. The enforcer decides from the caller's Identity and the rule name.
 */
import type { Config } from "../config.js";
import { forbidden } from "../http/errors.js";
import type { AppContext } from "../http/context.js";
import type { Identity } from "./identity.js";

/** Values a rule may compare against, e.g. the project a usage query is about. */
export type PolicyTarget = Record<string, string | null | undefined>;

export interface PolicyEnforcer {
  allows(rule: string, identity: Identity, target: PolicyTarget): boolean;
}

/** Admin or service role, project scoped: what Placement's default rules amount to. */
export function createPolicyEnforcer(_config: Config): PolicyEnforcer {
  return {
    allows: (_rule, identity) => identity.roles.includes("admin") || identity.roles.includes("service"),
  };
}

/** Throws Placement's 403 unless the caller may perform `rule`. */
export function authorize(c: AppContext, rule: string, target: PolicyTarget = {}): void {
  const identity = c.get("identity");
  const fullTarget: PolicyTarget = { project_id: identity.projectId, user_id: identity.userId, ...target };
  if (!c.get("policy").allows(rule, identity, fullTarget)) {
    throw forbidden(`Policy does not allow ${rule} to be performed.`);
  }
}
