/**
 * Authorization: handlers call `authorize(c, "placement:...")` before doing
 * anything. The enforcer holds Placement's registered rules (policy-defaults.ts)
 * with the operator's overrides from PLACEMENT_POLICY_FILE, all parsed at
 * start-up so that a bad file stops the server instead of denying (or
 * allowing) something at run time.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { Config } from "../config.js";
import type { AppContext } from "../http/context.js";
import { forbidden } from "../http/errors.js";
import { evaluate, parseCheckString, PolicySyntaxError, referencedRules, type Check, type Credentials, type PolicyTarget } from "./check-string.js";
import type { Identity } from "./identity.js";
import { ALL_RULES, type ApiRuleName, type RuleDefault } from "./policy-defaults.js";

export type { PolicyTarget } from "./check-string.js";

export interface PolicyEnforcer {
  allows(rule: string, identity: Identity, target: PolicyTarget): boolean;
}

export class PolicyFileError extends Error {}

export interface PolicyOptions {
  enforceNewDefaults: boolean;
  /** Rule name -> check string, as read from the operator's file. */
  overrides?: Record<string, string>;
  /** Where the overrides came from, for error messages. */
  source?: string;
  /** Registered defaults; tests may pass their own. */
  defaults?: RuleDefault[];
}

/** Builds the enforcer from the configuration, reading PLACEMENT_POLICY_FILE if set. */
export function createPolicyEnforcer(config: Config): PolicyEnforcer {
  const file = config.PLACEMENT_POLICY_FILE;
  return buildPolicyEnforcer({
    enforceNewDefaults: config.PLACEMENT_ENFORCE_NEW_DEFAULTS,
    overrides: file ? readPolicyFile(file) : undefined,
    source: file,
  });
}

export function buildPolicyEnforcer(options: PolicyOptions): PolicyEnforcer {
  const defaults = options.defaults ?? ALL_RULES;
  const registered = new Map(defaults.map((d) => [d.name, d]));
  const overrides = options.overrides ?? {};
  const where = options.source ? `policy file ${options.source}` : "policy overrides";
  const rules = new Map<string, Check>();

  for (const d of defaults) {
    const check = parseCheckString(d.check);
    // As oslo.policy: the deprecated default still grants access until new
    // defaults are enforced, unless the operator has set the rule explicitly.
    const keepDeprecated = d.deprecated !== undefined && !options.enforceNewDefaults && !(d.name in overrides);
    rules.set(d.name, keepDeprecated ? { kind: "or", checks: [check, parseCheckString(d.deprecated!)] } : check);
  }
  const parsedOverrides = new Map<string, Check>();
  for (const [name, text] of Object.entries(overrides)) {
    try {
      parsedOverrides.set(name, parseCheckString(text));
    } catch (err) {
      if (err instanceof PolicySyntaxError) throw new PolicyFileError(`${where}: rule "${name}": ${err.message}`);
      throw err;
    }
  }
  for (const [name, check] of parsedOverrides) rules.set(name, check);

  // An unregistered name is a helper only if some rule uses it; anything else
  // (in particular a misspelt placement:* name) would be silently ignored.
  const used = new Set([...rules.values()].flatMap(referencedRules));
  for (const name of parsedOverrides.keys()) {
    if (registered.has(name)) continue;
    if (name.startsWith("placement:") || !used.has(name)) {
      throw new PolicyFileError(`${where}: unknown rule "${name}" (not a Placement policy rule, and no rule refers to it)`);
    }
  }
  for (const [name, check] of rules) {
    for (const ref of referencedRules(check)) {
      if (!rules.has(ref)) throw new PolicyFileError(`${where}: rule "${name}" refers to undefined rule "${ref}"`);
    }
  }
  rejectCycles(rules, where);

  const lookup = (name: string) => rules.get(name);
  return {
    allows(rule, identity, target) {
      const check = rules.get(rule);
      // A handler naming a rule that does not exist is a programming error:
      // fail loudly rather than guess.
      if (!check || !registered.has(rule)) throw new Error(`policy rule ${rule} is not registered`);
      // Every Placement rule is project scoped (oslo.policy enforces scope by
      // default): system-scoped and unscoped tokens are refused whatever the
      // check string says.
      if (!isProjectScoped(identity)) return false;
      return evaluate(check, credentials(identity), target, lookup);
    },
  };
}

function isProjectScoped(identity: Identity): boolean {
  return identity.systemScope === null && identity.projectId !== null && identity.domainId === null;
}

function credentials(identity: Identity): Credentials {
  return {
    user_id: identity.userId,
    project_id: identity.projectId,
    domain_id: identity.domainId,
    system_scope: identity.systemScope,
    roles: identity.roles,
  };
}

function rejectCycles(rules: Map<string, Check>, where: string): void {
  const state = new Map<string, "visiting" | "done">();
  const visit = (name: string, path: string[]) => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") {
      throw new PolicyFileError(`${where}: rules refer to each other in a loop: ${[...path, name].join(" -> ")}`);
    }
    state.set(name, "visiting");
    for (const ref of referencedRules(rules.get(name)!)) visit(ref, [...path, name]);
    state.set(name, "done");
  };
  for (const name of rules.keys()) visit(name, []);
}

/** Reads an oslo.policy file: a mapping of rule name to check string, in YAML or JSON. */
export function readPolicyFile(path: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new PolicyFileError(`cannot read policy file ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new PolicyFileError(`policy file ${path} is not valid ${path.endsWith(".json") ? "JSON" : "YAML"}: ${(err as Error).message.split("\n")[0]}`);
  }
  if (data === null || data === undefined) return {};
  if (typeof data !== "object" || Array.isArray(data)) {
    throw new PolicyFileError(`policy file ${path} must map rule names to check strings`);
  }
  const rules: Record<string, string> = {};
  for (const [name, value] of Object.entries(data as Record<string, unknown>)) {
    if (typeof value !== "string") {
      throw new PolicyFileError(`policy file ${path}: rule "${name}" must be a check string, got ${JSON.stringify(value)}`);
    }
    rules[name] = value;
  }
  return rules;
}

/** Throws Placement's 403 unless the caller may perform `rule` on `target` (default: the caller's own project and user, as oslo.context). */
export function authorize(c: AppContext, rule: ApiRuleName, target?: PolicyTarget): void {
  const identity = c.get("identity");
  const effectiveTarget = target ?? { project_id: identity.projectId, user_id: identity.userId };
  if (!c.get("policy").allows(rule, identity, effectiveTarget)) {
    throw forbidden(`Policy does not allow ${rule} to be performed.`);
  }
}
