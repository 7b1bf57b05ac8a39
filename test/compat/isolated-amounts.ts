/**
 * The reference bug "isolate sums a shared provider's amount more than once"
 * (docs/placement-bugs.md), recognised in one pair of answers.
 *
 * Unless group_policy is none, Placement merges the groups of a candidate
 * into the AllocationRequestResource objects themselves, without the copy it
 * makes for group_policy=none (research_context.copy_arr_if_needed): with
 * isolate, and with a single granular group and no policy. So when the
 * unsuffixed group (which isolate does not separate) lands on the provider of
 * a numbered group, every candidate that reuses that object adds its amount
 * again: VCPU 3 or 8 where the groups ask for 1 + 1. It can then also drop
 * candidates whose inflated amounts no longer fit.
 *
 * Recognised when: ours takes exactly what the groups ask for (so ours is
 * right); the reference's candidates are
 * ours but for amounts, each at least ours and one larger somewhere; and the
 * reference has no candidate we lack.
 */

type Allocations = Record<string, { resources: Record<string, number> }>;
interface Candidates {
  allocation_requests: Array<{ allocations: Allocations | unknown[]; mappings?: Record<string, string[]> }>;
}

/** suffix -> class -> amount, from the request's resources{suffix} parameters. */
function requestedGroups(path: string): Map<string, Map<string, number>> {
  const groups = new Map<string, Map<string, number>>();
  for (const [key, value] of new URLSearchParams(path.slice(path.indexOf("?") + 1))) {
    const suffix = /^resources(.*)$/.exec(key)?.[1];
    if (suffix === undefined) continue;
    const classes = new Map<string, number>();
    for (const item of value.split(",")) {
      const [rc, amount] = item.split(":");
      classes.set(rc, (classes.get(rc) ?? 0) + Number(amount));
    }
    groups.set(suffix, classes);
  }
  return groups;
}

/** A candidate's shape without its amounts: which classes from which providers, and the mappings. */
const shape = (ar: Candidates["allocation_requests"][number]): string =>
  JSON.stringify([
    Object.entries(ar.allocations as Allocations)
      .map(([rp, a]) => `${rp}:${Object.keys(a.resources).sort().join(",")}`)
      .sort(),
    Object.entries(ar.mappings ?? {})
      .map(([suffix, rps]) => `${suffix}=${[...rps].sort().join(",")}`)
      .sort(),
  ]);

/**
 * True when `ar` takes of each class exactly what the groups ask for in all,
 * and from each provider no more than the groups mapped to it ask for (the
 * unsuffixed group may be mapped to several providers, so its share of one
 * is not known).
 */
function amountsAreRequested(ar: Candidates["allocation_requests"][number], groups: Map<string, Map<string, number>>): boolean {
  const mappings = ar.mappings ?? {};
  const asked = new Map<string, number>();
  for (const classes of groups.values()) for (const [rc, amount] of classes) asked.set(rc, (asked.get(rc) ?? 0) + amount);
  const taken = new Map<string, number>();
  for (const [rp, { resources }] of Object.entries(ar.allocations as Allocations)) {
    for (const [rc, amount] of Object.entries(resources)) {
      taken.set(rc, (taken.get(rc) ?? 0) + amount);
      let mapped = 0;
      for (const [suffix, classes] of groups) if ((mappings[suffix] ?? []).includes(rp)) mapped += classes.get(rc) ?? 0;
      if (amount > mapped) return false;
    }
  }
  return asked.size === taken.size && [...asked].every(([rc, amount]) => taken.get(rc) === amount);
}

export function isolatedAmountsAccumulate(path: string, referenceText: string, oursText: string): boolean {
  const query = new URLSearchParams(path.slice(path.indexOf("?") + 1));
  // copy_arr_if_needed copies only for group_policy=none: isolate, and a single granular group without a policy, share.
  if (query.get("group_policy") === "none") return false;
  const reference = JSON.parse(referenceText) as Candidates;
  const ours = JSON.parse(oursText) as Candidates;
  const lists = [...reference.allocation_requests, ...ours.allocation_requests];
  // Mappings (1.34+) say which group is on which provider: without them the amounts cannot be checked.
  if (lists.some((ar) => Array.isArray(ar.allocations) || ar.mappings === undefined)) return false;
  const groups = requestedGroups(path);
  if (!ours.allocation_requests.every((ar) => amountsAreRequested(ar, groups))) return false;

  const oursByShape = new Map(ours.allocation_requests.map((ar) => [shape(ar), ar.allocations as Allocations]));
  let inflated = false;
  for (const ar of reference.allocation_requests) {
    const mine = oursByShape.get(shape(ar));
    if (!mine) return false;
    for (const [rp, { resources }] of Object.entries(ar.allocations as Allocations)) {
      for (const [rc, amount] of Object.entries(resources)) {
        const right = mine[rp].resources[rc];
        if (amount < right) return false;
        if (amount > right) inflated = true;
      }
    }
  }
  return inflated;
}
