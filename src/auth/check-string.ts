/**
 * oslo.policy's rule language, so operators can reuse the policy files they
 * already write for Placement:
 *
 *   @  !  role:X  rule:X  key:value  key:%(target_key)s  'literal':%(target_key)s
 *   and / or / not, parentheses; precedence not > and > or.
 *
 * Parsing is strict where oslo.policy is lenient: oslo.policy logs a rule it
 * cannot understand and denies it forever, which hides a typo until a caller
 * complains. Here a syntax error is an exception, so start-up stops.
 */

export type Check =
  | { kind: "true" }
  | { kind: "false" }
  | { kind: "and"; checks: Check[] }
  | { kind: "or"; checks: Check[] }
  | { kind: "not"; check: Check }
  | { kind: "rule"; name: string }
  | { kind: "role"; match: string }
  /** `key:match`: a credential (or a quoted literal) compared with `match` after substitution from the target. */
  | { kind: "generic"; key: string; literal: boolean; match: string };

/** What the caller's token says, as oslo.context's to_policy_values() names it. */
export interface Credentials {
  user_id: string | null;
  project_id: string | null;
  domain_id: string | null;
  system_scope: string | null;
  roles: string[];
}

/** The object of the action, e.g. `{ project_id }` of the usages asked for. */
export type PolicyTarget = Record<string, string | null | undefined>;

export class PolicySyntaxError extends Error {}

type Token = { type: "(" | ")" | "and" | "or" | "not" } | { type: "check"; check: Check };

/** Parses a check string; the empty string allows everything, as in oslo.policy. */
export function parseCheckString(text: string): Check {
  const tokens = tokenize(text);
  if (tokens.length === 0) return { kind: "true" };
  let pos = 0;
  const fail = (why: string): never => {
    throw new PolicySyntaxError(`cannot parse rule "${text}": ${why}`);
  };

  const parseOr = (): Check => {
    const checks = [parseAnd()];
    while (tokens[pos]?.type === "or") {
      pos++;
      checks.push(parseAnd());
    }
    return checks.length === 1 ? checks[0] : { kind: "or", checks };
  };
  const parseAnd = (): Check => {
    const checks = [parseUnary()];
    while (tokens[pos]?.type === "and") {
      pos++;
      checks.push(parseUnary());
    }
    return checks.length === 1 ? checks[0] : { kind: "and", checks };
  };
  const parseUnary = (): Check => {
    const token = tokens[pos++];
    if (!token) return fail("unexpected end of rule");
    if (token.type === "not") return { kind: "not", check: parseUnary() };
    if (token.type === "(") {
      const inner = parseOr();
      if (tokens[pos]?.type !== ")") fail("missing ')'");
      pos++;
      return inner;
    }
    if (token.type === "check") return token.check;
    return fail(`unexpected '${token.type}'`);
  };

  const check = parseOr();
  if (pos < tokens.length) {
    const extra = tokens[pos];
    fail(extra.type === "check" ? "two checks without 'and' or 'or' between them" : `unexpected '${extra.type}'`);
  }
  return check;
}

/** oslo.policy's tokenizer: whitespace separates tokens; parentheses may stick to a check's ends. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  for (const word of text.split(/\s+/).filter((w) => w.length > 0)) {
    const open = word.length - word.replace(/^\(+/, "").length;
    const core = word.slice(open);
    const close = core.length - core.replace(/\)+$/, "").length;
    const clean = core.slice(0, core.length - close);
    for (let i = 0; i < open; i++) tokens.push({ type: "(" });
    const lowered = clean.toLowerCase();
    if (lowered === "and" || lowered === "or" || lowered === "not") tokens.push({ type: lowered });
    else if (clean.length > 0) tokens.push({ type: "check", check: parseSingleCheck(clean, text) });
    for (let i = 0; i < close; i++) tokens.push({ type: ")" });
  }
  return tokens;
}

function parseSingleCheck(token: string, text: string): Check {
  if (token === "@") return { kind: "true" };
  if (token === "!") return { kind: "false" };
  const colon = token.indexOf(":");
  if (colon <= 0) throw new PolicySyntaxError(`cannot parse rule "${text}": "${token}" is not a check (expected kind:value, @ or !)`);
  const kind = token.slice(0, colon);
  const match = token.slice(colon + 1);
  if (match.length === 0) throw new PolicySyntaxError(`cannot parse rule "${text}": "${token}" has no value`);
  checkSubstitutions(match, text);
  if (kind === "rule") return { kind: "rule", name: match };
  if (kind === "role") return { kind: "role", match };
  if (kind === "http" || kind === "https") {
    throw new PolicySyntaxError(`cannot parse rule "${text}": remote "${kind}:" checks are not supported`);
  }
  const quoted = /^(['"]).*\1$/.test(kind) && kind.length >= 2;
  return { kind: "generic", key: quoted ? kind.slice(1, -1) : kind, literal: quoted, match };
}

const SUBSTITUTION = /%\(([^)]*)\)s/g;

/** Only `%(name)s` substitutions are meaningful; a stray `%(` is a typo worth stopping for. */
function checkSubstitutions(match: string, text: string): void {
  const rest = match.replace(SUBSTITUTION, "");
  if (rest.includes("%(")) throw new PolicySyntaxError(`cannot parse rule "${text}": bad substitution in "${match}"`);
}

/** Replaces `%(key)s` from the target; undefined when a key is missing (the check then fails, as in oslo.policy). */
function substitute(match: string, target: PolicyTarget): string | undefined {
  let missing = false;
  const result = match.replace(SUBSTITUTION, (_all, key: string) => {
    const value = target[key];
    if (value === undefined || value === null) {
      missing = true;
      return "";
    }
    return value;
  });
  return missing ? undefined : result;
}

/** Names of the rules a check refers to with `rule:X`. */
export function referencedRules(check: Check): string[] {
  switch (check.kind) {
    case "rule":
      return [check.name];
    case "and":
    case "or":
      return check.checks.flatMap(referencedRules);
    case "not":
      return referencedRules(check.check);
    default:
      return [];
  }
}

/**
 * Evaluates a check. `lookup` resolves `rule:X` (references are validated
 * when rules are loaded, so a missing one here denies).
 */
export function evaluate(check: Check, creds: Credentials, target: PolicyTarget, lookup: (name: string) => Check | undefined): boolean {
  switch (check.kind) {
    case "true":
      return true;
    case "false":
      return false;
    case "and":
      return check.checks.every((c) => evaluate(c, creds, target, lookup));
    case "or":
      return check.checks.some((c) => evaluate(c, creds, target, lookup));
    case "not":
      return !evaluate(check.check, creds, target, lookup);
    case "rule": {
      const rule = lookup(check.name);
      return rule !== undefined && evaluate(rule, creds, target, lookup);
    }
    case "role": {
      const role = substitute(check.match, target)?.toLowerCase();
      return role !== undefined && creds.roles.some((r) => r.toLowerCase() === role);
    }
    case "generic": {
      const expected = substitute(check.match, target);
      if (expected === undefined) return false;
      if (check.literal) return check.key === expected;
      const actual = (creds as unknown as Record<string, unknown>)[check.key];
      // A credential the token does not carry never matches (oslo.policy would
      // compare the string "None", letting a project-less token match a
      // project-less target).
      if (Array.isArray(actual)) return actual.some((v) => String(v) === expected);
      if (actual === null || actual === undefined || typeof actual === "object") return false;
      return String(actual) === expected;
    }
  }
}
