/**
 * One request group's constraints as a list of filters over single
 * providers, in the order the explain funnel applies them (docs/explain.md):
 * each resource class in the order of the query, then the plain required
 * traits, the forbidden traits, each any-of list of traits, each member_of
 * (its any-of lists, then its forbidden aggregates), then in_tree.
 *
 * A filter judges one provider on its own, as GET /resource_providers does
 * with the same query parameters; every test is a rule of ../rules/
 * (capacity, memberships, trees), so the funnel cannot drift from what the
 * candidates engine applies. A name the database does not know matches no
 * provider. Each filter also says, in an operator's words, why a provider
 * fails it.
 */
import type { RequestGroup } from "../../query/request-groups.js";
import type { TreeMember } from "../candidates/cloud-trees.js";
import type { ViewRead } from "../candidates/cloud-view.js";
import { canTake, hasRoomFor, type Room } from "../rules/capacity.js";
import { allows } from "../rules/memberships.js";
import { inTree } from "../rules/trees.js";

/** What a filter reads of a provider (a provider of the cloud view's copy). */
export type JudgedProvider = Pick<TreeMember, "id" | "rootId" | "inventories" | "traits" | "aggregates">;

export interface ProviderFilter {
  /** The constraint as the query wrote it, e.g. `resources1:VCPU:4`, `required:!CUSTOM_X`, `member_of:in:<uuid>,<uuid>`. */
  filter: string;
  passes(p: JudgedProvider): boolean;
  /** Why `p` fails the filter (asked only of a provider that does). */
  short(p: JudgedProvider): string;
}

/** The filters of `group`, in funnel order, with the ids of `names` (the view's lookup of the request's names). */
export function groupFilters(group: RequestGroup, names: Pick<ViewRead["names"], "resourceClasses" | "traits" | "aggregates">, rootOfUuid: (uuid: string) => number | undefined): ProviderFilter[] {
  const s = group.suffix;
  const traitIds = (list: Iterable<string>) => [...list].flatMap((t) => names.traits.get(t) ?? []);
  const aggregateIds = (list: Iterable<string>) => [...list].flatMap((a) => names.aggregates.get(a) ?? []);
  const out: ProviderFilter[] = [];

  for (const [rc, amount] of group.resources) out.push(resourceFilter(`resources${s}:${rc}:${amount}`, rc, names.resourceClasses.get(rc), amount));

  const required = group.traits.required;
  for (const list of required.filter((l) => l.length === 1)) {
    const e = { anyOf: [traitIds(list)], forbidden: [] };
    out.push({ filter: `required${s}:${list[0]}`, passes: (p) => allows(p.traits, e), short: () => `lacks trait ${list[0]}` });
  }
  for (const trait of group.traits.forbidden) {
    const e = { anyOf: [], forbidden: traitIds([trait]) };
    out.push({ filter: `required${s}:!${trait}`, passes: (p) => allows(p.traits, e), short: () => `has forbidden trait ${trait}` });
  }
  for (const list of required.filter((l) => l.length > 1)) {
    const e = { anyOf: [traitIds(list)], forbidden: [] };
    out.push({
      filter: `required${s}:in:${list.join(",")}`,
      passes: (p) => allows(p.traits, e),
      short: () => `lacks every trait of ${list.join(", ")}`,
    });
  }

  for (const list of group.aggregates.memberOf) {
    const e = { anyOf: [aggregateIds(list)], forbidden: [] };
    const one = list.length === 1;
    out.push({
      filter: `member_of${s}:${one ? "" : "in:"}${list.join(",")}`,
      passes: (p) => allows(p.aggregates, e),
      short: () => (one ? `not in aggregate ${list[0]}` : `in none of aggregates ${list.join(", ")}`),
    });
  }
  for (const aggregate of group.aggregates.forbidden) {
    const e = { anyOf: [], forbidden: aggregateIds([aggregate]) };
    out.push({
      filter: `member_of${s}:!${aggregate}`,
      passes: (p) => allows(p.aggregates, e),
      short: () => `in forbidden aggregate ${aggregate}`,
    });
  }

  if (group.inTree !== undefined) {
    const uuid = group.inTree;
    // An unknown provider has no tree: nothing is in it (0 is no root id).
    const root = rootOfUuid(uuid) ?? 0;
    out.push({ filter: `in_tree${s}:${uuid}`, passes: (p) => root !== 0 && inTree(p.rootId, root), short: () => `not in the tree of ${uuid}` });
  }
  return out;
}

function resourceFilter(filter: string, rc: string, classId: number | undefined, amount: number): ProviderFilter {
  // A loop, not find() with an arrow: this runs for every provider of the cloud.
  const inventoryOf = (p: JudgedProvider) => {
    for (const inv of p.inventories) if (inv.resourceClassId === classId) return inv;
    return undefined;
  };
  return {
    filter,
    passes: (p) => {
      const inv = classId === undefined ? undefined : inventoryOf(p);
      return inv !== undefined && canTake(inv, amount);
    },
    short: (p) => {
      const inv = classId === undefined ? undefined : inventoryOf(p);
      return inv ? `${rc}: ${amount} asked, ${shortOfRoom(inv, amount)}` : `${rc}: ${amount} asked, no inventory`;
    },
  };
}

/** Why an inventory cannot take `amount` (the first rule of canTake it breaks, in the order an operator fixes them). */
function shortOfRoom(inv: Room, amount: number): string {
  if (!hasRoomFor(inv, amount)) return `${inv.capacity - inv.used} free of ${inv.capacity}`;
  if (amount < inv.minUnit) return `min_unit ${inv.minUnit}`;
  if (amount > inv.maxUnit) return `max_unit ${inv.maxUnit}`;
  return `not a multiple of step_size ${inv.stepSize}`;
}
