/**
 * Randomized clouds and candidates queries for the explain tests: flat
 * clouds, clouds of trees, and clouds with sharing providers, built straight
 * in the tables (test/candidates/data.ts), with usage, units, reserves,
 * ratios, traits and aggregates drawn from a seeded generator.
 */
import type { Random } from "../compat/random.js";
import { custom, type Data, type Provider } from "../candidates/data.js";

export type CloudKind = "flat" | "nested" | "sharing";

export interface Cloud {
  classes: string[];
  traits: string[];
  aggregates: string[];
  providers: Provider[];
}

export async function makeCloud(d: Data, rng: Random, kind: CloudKind): Promise<Cloud> {
  const cloud: Cloud = {
    classes: [custom("XA"), custom("XB"), custom("XC")],
    traits: [custom("XT1"), custom("XT2"), custom("XT3")],
    aggregates: [rng.uuid(), rng.uuid()],
    providers: [],
  };
  for (const t of cloud.traits) await d.defineTrait(t);
  const count = rng.int(10, 18);
  for (let i = 0; i < count; i++) {
    const parent = kind === "nested" && cloud.providers.length > 0 && rng.chance(0.5) ? rng.pick(cloud.providers) : undefined;
    const inventory: Record<string, { total: number; reserved: number; minUnit: number; maxUnit: number; stepSize: number; ratio: number }> = {};
    for (const rc of cloud.classes) {
      if (!rng.chance(0.6)) continue;
      const total = rng.int(1, 8);
      inventory[rc] = {
        total,
        reserved: rng.chance(0.2) ? rng.int(0, total - 1) : 0,
        minUnit: rng.chance(0.2) ? 2 : 1,
        maxUnit: rng.chance(0.2) ? Math.max(2, total - 1) : total,
        stepSize: rng.chance(0.15) ? 2 : 1,
        ratio: rng.pick([1, 1, 1.5, 2]),
      };
    }
    const traits = cloud.traits.filter(() => rng.chance(0.4));
    if (kind === "sharing" && rng.chance(0.25)) traits.push("MISC_SHARES_VIA_AGGREGATE");
    const aggregates = cloud.aggregates.filter(() => rng.chance(0.4));
    const p = await d.provider({ parent, inventory, traits, aggregates });
    cloud.providers.push(p);
    for (const [rc, inv] of Object.entries(inventory)) if (rng.chance(0.4)) await d.allocate(p, rc, rng.int(1, inv.total));
  }
  return cloud;
}

/** A random query at the latest microversion: one to three groups, traits of every form, member_of, in_tree, the combining parameters. */
export function makeQuery(cloud: Cloud, rng: Random): string {
  const parts: string[] = [];
  const group = (suffix: string) => {
    const resources = cloud.classes.filter(() => rng.chance(0.5));
    if (resources.length === 0) resources.push(rng.pick(cloud.classes));
    parts.push(`resources${suffix}=${resources.map((rc) => `${rc}:${rng.int(1, 3)}`).join(",")}`);
    // The first trait only in any-of lists, the others plain or forbidden: never both required and forbidden.
    const [anyOf, ...rest] = cloud.traits;
    for (const t of rest) if (rng.chance(0.3)) parts.push(`required${suffix}=${rng.chance(0.6) ? t : `!${t}`}`);
    if (rng.chance(0.2)) parts.push(`required${suffix}=in:${anyOf},${rest[0]}`);
    if (rng.chance(0.3)) {
      const r = rng.next();
      const agg = rng.pick(cloud.aggregates);
      parts.push(`member_of${suffix}=${r < 0.5 ? agg : r < 0.75 ? `in:${cloud.aggregates.join(",")}` : `!${agg}`}`);
    }
    if (rng.chance(0.1)) parts.push(`in_tree${suffix}=${rng.pick(cloud.providers).uuid}`);
  };
  group("");
  const granular = rng.int(0, 2);
  for (let g = 1; g <= granular; g++) group(String(g));
  if (granular > 0) parts.push(`group_policy=${rng.pick(["none", "isolate"])}`);
  if (rng.chance(0.15)) parts.push(`root_required=${rng.chance(0.5) ? "" : "!"}${rng.pick(cloud.traits)}`);
  if (rng.chance(0.3)) parts.push(`limit=${rng.int(1, 3)}`);
  return parts.join("&");
}

/**
 * The GET /resource_providers query string that applies the funnel's
 * filters `filters` (as explain names them, e.g. `resources1:CUSTOM_X:2`) to
 * single providers, suffixes dropped.
 */
export function providersQuery(filters: string[]): string {
  const resources: string[] = [];
  const params: string[] = [];
  for (const f of filters) {
    const [key, ...rest] = f.split(":");
    const value = rest.join(":");
    const name = ["resources", "required", "member_of", "in_tree"].find((n) => key.startsWith(n));
    if (name === "resources") resources.push(value);
    else params.push(`${name}=${value}`);
  }
  return [...(resources.length > 0 ? [`resources=${resources.join(",")}`] : []), ...params].join("&");
}
