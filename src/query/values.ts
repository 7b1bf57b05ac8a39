/**
 * Parsers for the values of the filter parameters shared by
 * GET /resource_providers and GET /allocation_candidates: `resources`,
 * `required` (with `!` and `in:`), `member_of` (with `in:` and `!`) and
 * `in_tree`. Messages are Placement's, word for word: clients and the
 * conformance tests read them.
 */
import { badRequest, ErrorCode } from "../http/errors.js";
import type { Microversion } from "../http/microversion.js";
import { isUuidLike } from "../http/uuid.js";

/** A trait expression: every inner list must be matched by at least one of its traits (AND of ORs). */
export interface TraitFilter {
  required: string[][];
  forbidden: Set<string>;
}

/** An aggregate expression: member of at least one aggregate of every inner list, of none of `forbidden`. */
export interface AggregateFilter {
  memberOf: string[][];
  forbidden: Set<string>;
}

const RESOURCES_FORM = "Badly formed resources parameter. Expected resources query string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024.";

/** `VCPU:2,MEMORY_MB:1024` to an ordered map of class name to amount. */
export function parseResources(value: string): Map<string, number> {
  if (value.trim() === "") throw badRequest(`${RESOURCES_FORM} Got: empty string.`);
  const out = new Map<string, number>();
  for (const item of value.split(",")) {
    const parts = item.split(":");
    if (parts.length !== 2) throw badRequest(`${RESOURCES_FORM} Got: ${item}.`);
    const [name, rawAmount] = parts;
    // Python's int() accepts surrounding blanks and a sign; so do we.
    if (!/^\s*[+-]?\d+\s*$/.test(rawAmount)) {
      throw badRequest(`Requested resource ${name} expected positive integer amount. Got: ${rawAmount}.`);
    }
    const amount = Number(rawAmount.trim());
    if (amount < 1) throw badRequest(`Requested resource ${name} requires amount >= 1. Got: ${amount}.`);
    out.set(name, amount);
  }
  return out;
}

/** One `required` value: `A,!B` (forbidden from 1.22) or `in:A,B` (any-of, from 1.39). */
export function parseTraitValue(value: string, allowForbidden: boolean, allowAnyOf: boolean): TraitFilter {
  if (value.startsWith("in:")) {
    if (!allowAnyOf) {
      throw badRequest(
        `Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39. Got: ${value}`,
      );
    }
    const anyOf = unique(value.slice(3).split(",").map((s) => s.trim()));
    if (anyOf.some((t) => t === "")) {
      throw badRequest(
        `Invalid query string parameters: Expected 'required' parameter value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: ${value}`,
      );
    }
    if (anyOf.some((t) => t.startsWith("!"))) {
      throw badRequest(
        `Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden traits. Got: ${value}`,
      );
    }
    return { required: [anyOf], forbidden: new Set() };
  }
  const all = value.split(",").map((s) => s.trim());
  // Placement strips any number of leading '!' (a known quirk kept for compatibility).
  const forbidden = new Set(all.filter((t) => t.startsWith("!")).map((t) => t.replace(/^!+/, "")));
  if (all.some((t) => t === "") || [...forbidden].some((t) => t === "")) {
    const form = allowForbidden ? "HW_CPU_X86_VMX,!CUSTOM_MAGIC" : "HW_CPU_X86_VMX,CUSTOM_MAGIC";
    throw badRequest(
      `Invalid query string parameters: Expected 'required' parameter value of the form: ${form}. Got an empty trait in: ${value}`,
    );
  }
  if (forbidden.size > 0 && !allowForbidden) {
    throw badRequest(
      `Invalid query string parameters: Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: ${value}`,
    );
  }
  return { required: unique(all.filter((t) => !t.startsWith("!"))).map((t) => [t]), forbidden };
}

/**
 * All `required<suffix>` values of a request. Before 1.39 only the last one
 * counts (a repeated key overwrote the earlier one); from 1.39 they are ANDed.
 */
export function parseTraitValues(values: string[], mv: Microversion): TraitFilter {
  const allowForbidden = mv.atLeast("1.22");
  const allowAnyOf = mv.atLeast("1.39");
  const used = allowAnyOf ? values : values.slice(-1);
  const out: TraitFilter = { required: [], forbidden: new Set() };
  for (const value of used) {
    const one = parseTraitValue(value, allowForbidden, allowAnyOf);
    out.required.push(...one.required);
    for (const t of one.forbidden) out.forbidden.add(t);
  }
  return out;
}

/** The flat `A,!B` form of `root_required`, which has no `in:`. */
export function parseRootRequired(value: string): { required: string[]; forbidden: string[] } {
  const parsed = parseTraitValue(value, true, false);
  const required = parsed.required.map(([t]) => t);
  const conflicts = required.filter((t) => parsed.forbidden.has(t));
  if (conflicts.length > 0) {
    throw badRequest(
      `Conflicting required and forbidden traits found in root_required: ${conflicts.sort().join(", ")}`,
      ErrorCode.QUERYPARAM_BAD_VALUE,
    );
  }
  return { required, forbidden: [...parsed.forbidden] };
}

/** One `member_of` value: `UUID`, `!UUID`, `in:U1,U2` or `!in:U1,U2`. */
export function parseMemberOfValue(value: string): { required: string[]; forbidden: string[] } {
  if (value.includes(",") && !(value.startsWith("in:") || value.startsWith("!in:"))) {
    throw badRequest(
      `Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword using the valid microversion. Got: ${value}`,
    );
  }
  let required: string[] = [];
  let forbidden: string[] = [];
  if (value.startsWith("!in:")) forbidden = value.slice(4).split(",");
  else if (value.startsWith("!")) forbidden = [value.slice(1)];
  else if (value.startsWith("in:")) required = value.slice(3).split(",");
  else required = [value];
  for (const uuid of [...required, ...forbidden]) {
    if (!isUuidLike(uuid)) {
      throw badRequest(
        `Invalid query string parameters: Expected 'member_of' parameter to contain valid UUID(s). Got: ${uuid}`,
      );
    }
  }
  return { required: unique(required), forbidden: unique(forbidden) };
}

/** All `member_of<suffix>` values: repeated from 1.24 (ANDed), forbidden (`!`) from 1.32. */
export function parseMemberOfValues(values: string[], suffix: string, mv: Microversion): AggregateFilter {
  if (mv.lessThan("1.24") && values.length > 1) {
    throw badRequest(`Multiple member_of${suffix} parameters are not supported`);
  }
  const out: AggregateFilter = { memberOf: [], forbidden: new Set() };
  for (const value of values) {
    const { required, forbidden } = parseMemberOfValue(value);
    if (required.length > 0) out.memberOf.push(required);
    if (forbidden.length > 0) {
      if (mv.lessThan("1.32")) {
        throw badRequest(`Forbidden member_of${suffix} parameters are not supported in the specified microversion`);
      }
      for (const a of forbidden) out.forbidden.add(a);
    }
  }
  return out;
}

export function parseInTree(value: string): string {
  const uuid = value.trim();
  if (!isUuidLike(uuid)) {
    throw badRequest(`Invalid query string parameters: Expected 'in_tree' parameter to be a format of uuid. Got: ${value}`);
  }
  return uuid;
}

export function unique<T>(items: T[]): T[] {
  return [...new Set(items)];
}

