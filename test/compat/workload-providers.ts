/** Workload steps for providers, inventories, aggregates, traits and resource classes. */
import type { Model, Provider, Step } from "./model.js";
import type { Random } from "./random.js";
import { generationOf, numberText, uuidOf, type Response } from "./request.js";
import { garbageBody, pickVersion, request, STANDARD_CLASSES, STANDARD_TRAITS } from "./vocabulary.js";

export const AGGREGATES = [
  "a1111111-1111-4111-8111-111111111111",
  "a2222222-2222-4222-8222-222222222222",
  "a3333333-3333-4333-8333-333333333333",
];

export interface Context {
  r: Random;
  model: Model;
  /** Registers a provider symbol whose uuid each server chooses. */
  generatedUuid(sym: string, reference: Response, ours: Response): void;
}

const providersOf = (model: Model): Provider[] => [...model.providers.values()];

export function someProvider(c: Context): string {
  const all = providersOf(c.model);
  if (all.length === 0 || c.r.chance(0.04)) return c.r.uuid();
  return c.r.pick(all).sym;
}

export function classes(c: Context): string[] {
  return [...STANDARD_CLASSES, ...c.model.customClasses];
}

export function traits(c: Context): string[] {
  return [...STANDARD_TRAITS, ...c.model.customTraits];
}

export function createProvider(c: Context): Step {
  const { r, model } = c;
  const v = pickVersion(r);
  const generated = r.chance(0.1);
  const sym = generated ? model.nextName("generated-") : r.uuid();
  const body: Record<string, unknown> = { name: model.nextName("rp-") };
  let label = "POST /resource_providers";
  if (!generated) body.uuid = sym;
  const existing = providersOf(model);
  if (existing.length > 0 && r.chance(0.5)) body.parent_provider_uuid = uuidOf(r.pick(existing).sym);
  const variant = r.weighted<string>([
    [85, ""],
    [3, "duplicate name"],
    [2, "no name"],
    [1, "long name"],
    [2, "bad uuid"],
    [2, "upper-case uuid"],
    [2, "upper-case parent"],
    [2, "unknown parent"],
    [1, "garbage"],
  ]);
  if (variant === "duplicate name" && existing.length > 0) body.name = r.pick(existing).name;
  if (variant === "no name") delete body.name;
  if (variant === "long name") body.name = "x".repeat(201);
  if (variant === "bad uuid") body.uuid = "not-a-uuid";
  if (variant === "upper-case uuid" && !generated) body.uuid = sym.toUpperCase();
  if (variant === "upper-case parent" && existing.length > 0) body.parent_provider_uuid = r.pick(existing).sym.toUpperCase();
  if (variant === "unknown parent") body.parent_provider_uuid = r.uuid();
  if (variant) label += ` [${variant}]`;
  return {
    label,
    request: request(r, "POST", "/resource_providers", v, variant === "garbage" ? garbageBody(r) : body),
    touches: { providers: [sym] },
    after: (ref, ours) => generated && c.generatedUuid(sym, ref, ours),
  };
}

export function getProvider(c: Context): Step {
  const sym = someProvider(c);
  return {
    label: "GET /resource_providers/{uuid}",
    request: request(c.r, "GET", `/resource_providers/${uuidOf(sym)}`, pickVersion(c.r)),
  };
}

export function listProviders(c: Context): Step {
  const { r } = c;
  const v = pickVersion(r);
  const params: string[] = [];
  const all = providersOf(c.model);
  const filters: Array<[number, () => string]> = [
    [0, () => `name=${encodeURIComponent(all.length ? r.pick(all).name : "nothing")}`],
    [0, () => `uuid=${all.length ? uuidOf(r.pick(all).sym) : r.uuid()}`],
    [3, () => `member_of=${r.chance(0.5) ? "in:" + r.some(AGGREGATES, 2).join(",") : r.pick(AGGREGATES)}`],
    [4, () => `resources=${r.pick(classes(c))}:${r.int(1, 64)}${r.chance(0.4) ? `,${r.pick(classes(c))}:${r.int(1, 8)}` : ""}`],
    [14, () => `in_tree=${all.length ? uuidOf(r.pick(all).sym) : r.uuid()}`],
    [18, () => `required=${r.some(traits(c), 2).map((t) => (v.minor >= 22 && r.chance(0.3) ? "!" + t : t)).join(",") || "HW_CPU_X86_SSE"}`],
  ];
  for (const [since, make] of filters) if (r.chance(0.3) && (since <= v.minor || r.chance(0.1))) params.push(make());
  let label = "GET /resource_providers";
  if (r.chance(0.08)) {
    const bad = r.pick(["resources=VCPU", "resources=VCPU:x", "member_of=in:bad", "foo=bar", "in_tree=bad", "uuid=bad", "required=!!X", "resources=NOPE:1"]);
    params.push(bad);
    label += ` [${bad.split("=")[0]} bad]`;
  }
  const query = params.length ? `?${params.join("&")}` : "";
  return { label, request: request(r, "GET", `/resource_providers${query}`, v), global: true };
}

export function updateProvider(c: Context): Step {
  const { r, model } = c;
  const sym = someProvider(c);
  const provider = model.providers.get(sym);
  const v = pickVersion(r);
  const body: Record<string, unknown> = { name: provider && r.chance(0.3) ? provider.name : model.nextName("rp-") };
  let label = "PUT /resource_providers/{uuid}";
  if (v.minor >= 14 && r.chance(0.5)) {
    const others = providersOf(model).filter((p) => p.sym !== sym);
    const choice = r.weighted<string>([
      [4, "same parent"],
      [2, "new parent"],
      [1, "no parent"],
      [1, "upper-case parent"],
    ]);
    label += ` [${choice}]`;
    if (choice === "same parent") body.parent_provider_uuid = provider?.parent ? uuidOf(provider.parent) : null;
    if (choice === "new parent") body.parent_provider_uuid = others.length ? uuidOf(r.pick(others).sym) : r.uuid();
    if (choice === "no parent") body.parent_provider_uuid = null;
    if (choice === "upper-case parent") body.parent_provider_uuid = others.length ? r.pick(others).sym.toUpperCase() : r.uuid();
  }
  if (r.chance(0.05)) {
    label += " [garbage]";
    return { label, request: request(r, "PUT", `/resource_providers/${uuidOf(sym)}`, v, garbageBody(r)), touches: { providers: [sym] } };
  }
  return { label, request: request(r, "PUT", `/resource_providers/${uuidOf(sym)}`, v, body), touches: { providers: [sym] } };
}

export function deleteProvider(c: Context): Step {
  const { r, model } = c;
  const leaves = providersOf(model).filter((p) => model.children(p.sym).length === 0);
  const sym = leaves.length && r.chance(0.8) ? r.pick(leaves).sym : someProvider(c);
  return {
    label: "DELETE /resource_providers/{uuid}",
    request: request(r, "DELETE", `/resource_providers/${uuidOf(sym)}`, pickVersion(r)),
    touches: { providers: [sym] },
  };
}

function inventoryRecord(c: Context, withGeneration: string | null): { record: Record<string, unknown>; variant: string } {
  const { r } = c;
  const total = r.int(1, 4096);
  const record: Record<string, unknown> = { total };
  if (withGeneration) record.resource_provider_generation = generationOf(withGeneration);
  if (r.chance(0.5)) record.reserved = r.int(0, Math.floor(total / 4));
  if (r.chance(0.3)) record.min_unit = r.int(1, 2);
  if (r.chance(0.4)) record.max_unit = r.int(Math.max(1, Math.floor(total / 2)), total);
  if (r.chance(0.2)) record.step_size = r.pick([1, 1, 2]);
  if (r.chance(0.6)) record.allocation_ratio = numberText(r.pick(["1.0", "1", "1.5", "16.0", "16", "4", "0.5", "2.25"]));
  const variant = r.weighted<string>([
    [88, ""],
    [2, "allocation_ratio 0"],
    [2, "total 0"],
    [1, "reserved > total"],
    [1, "min_unit > max_unit"],
    [1, "negative reserved"],
    [1, "ratio string"],
    [1, "extra property"],
    [1, "float total"],
    [1, "huge total"],
  ]);
  if (variant === "allocation_ratio 0") record.allocation_ratio = numberText(r.pick(["0", "0.0"]));
  if (variant === "total 0") record.total = 0;
  if (variant === "reserved > total") record.reserved = total + 1;
  if (variant === "min_unit > max_unit") Object.assign(record, { min_unit: 5, max_unit: 2 });
  if (variant === "negative reserved") record.reserved = -1;
  if (variant === "ratio string") record.allocation_ratio = "x";
  if (variant === "extra property") record.colour = "blue";
  if (variant === "float total") record.total = numberText("10.5");
  if (variant === "huge total") record.total = 2 ** 31;
  return { record, variant };
}

export function putInventories(c: Context): Step {
  const { r, model } = c;
  const sym = someProvider(c);
  const inventories: Record<string, unknown> = {};
  const variants: string[] = [];
  const current = model.providers.get(sym)?.inventories;
  for (const rc of r.some(classes(c), 3)) {
    const { record, variant } = inventoryRecord(c, null);
    // Keep most existing totals so allocations usually stay valid (shrinking below them is its own case).
    const old = current?.get(rc);
    if (old && r.chance(0.7) && !variant) record.total = old.total;
    inventories[rc] = record;
    if (variant) variants.push(variant);
  }
  if (r.chance(0.03)) inventories.CUSTOM_NOT_THERE = { total: 1 };
  const body: Record<string, unknown> = { resource_provider_generation: generationOf(sym), inventories };
  if (r.chance(0.04)) {
    body.resource_provider_generation = 9999;
    variants.push("stale generation");
  }
  if (r.chance(0.02)) {
    delete body.resource_provider_generation;
    variants.push("no generation");
  }
  return {
    label: `PUT /resource_providers/{uuid}/inventories${variants.length ? ` [${variants.join(", ")}]` : ""}`,
    request: request(r, "PUT", `/resource_providers/${uuidOf(sym)}/inventories`, pickVersion(r), body),
    touches: { inventories: [sym] },
  };
}

export function putInventory(c: Context): Step {
  const { r } = c;
  const sym = someProvider(c);
  const rc = r.pick(classes(c));
  const { record, variant } = inventoryRecord(c, sym);
  return {
    label: `PUT /resource_providers/{uuid}/inventories/{rc}${variant ? ` [${variant}]` : ""}`,
    request: request(r, "PUT", `/resource_providers/${uuidOf(sym)}/inventories/${rc}`, pickVersion(r), record),
    touches: { inventories: [sym] },
  };
}

export function postInventory(c: Context): Step {
  const { r } = c;
  const sym = someProvider(c);
  const { record, variant } = inventoryRecord(c, r.chance(0.5) ? sym : null);
  record.resource_class = r.pick(classes(c));
  return {
    label: `POST /resource_providers/{uuid}/inventories${variant ? ` [${variant}]` : ""}`,
    request: request(r, "POST", `/resource_providers/${uuidOf(sym)}/inventories`, pickVersion(r), record),
    touches: { inventories: [sym] },
  };
}

export function deleteInventory(c: Context): Step {
  const { r, model } = c;
  const sym = someProvider(c);
  const mine = [...(model.providers.get(sym)?.inventories.keys() ?? [])];
  const all = r.chance(0.3);
  const rc = mine.length && r.chance(0.8) ? r.pick(mine) : r.pick(classes(c));
  const path = all ? `/resource_providers/${uuidOf(sym)}/inventories` : `/resource_providers/${uuidOf(sym)}/inventories/${rc}`;
  return {
    label: all ? "DELETE /resource_providers/{uuid}/inventories" : "DELETE /resource_providers/{uuid}/inventories/{rc}",
    request: request(r, "DELETE", path, pickVersion(r)),
    touches: { inventories: [sym] },
  };
}

export function getInventories(c: Context): Step {
  const { r, model } = c;
  const sym = someProvider(c);
  if (r.chance(0.5)) {
    return { label: "GET /resource_providers/{uuid}/inventories", request: request(r, "GET", `/resource_providers/${uuidOf(sym)}/inventories`, pickVersion(r)) };
  }
  const mine = [...(model.providers.get(sym)?.inventories.keys() ?? [])];
  const rc = mine.length && r.chance(0.7) ? r.pick(mine) : r.pick(classes(c));
  return {
    label: "GET /resource_providers/{uuid}/inventories/{rc}",
    request: request(r, "GET", `/resource_providers/${uuidOf(sym)}/inventories/${rc}`, pickVersion(r)),
  };
}

export function putAggregates(c: Context): Step {
  const { r } = c;
  const sym = someProvider(c);
  const v = pickVersion(r, 1);
  const aggregates: string[] = r.some(AGGREGATES, 2);
  const variant = r.weighted<string>([
    [88, ""],
    [2, "urn:uuid"],
    [2, "braces"],
    [2, "not a uuid"],
    [2, "duplicate"],
    [2, "upper case"],
    [2, "stale generation"],
  ]);
  if (variant === "urn:uuid") aggregates.push(`urn:uuid:${AGGREGATES[0]}`);
  if (variant === "braces") aggregates.push(`{${AGGREGATES[1]}}`);
  if (variant === "not a uuid") aggregates.push("not-a-uuid");
  if (variant === "duplicate") aggregates.push(AGGREGATES[0], AGGREGATES[0]);
  if (variant === "upper case") aggregates.push(AGGREGATES[2].toUpperCase());
  const body = v.minor >= 19 ? { aggregates, resource_provider_generation: variant === "stale generation" ? 9999 : generationOf(sym) } : aggregates;
  return {
    label: `PUT /resource_providers/{uuid}/aggregates${variant ? ` [${variant}]` : ""}`,
    request: request(r, "PUT", `/resource_providers/${uuidOf(sym)}/aggregates`, v, body),
    touches: { aggregates: [sym] },
  };
}

export function getAggregates(c: Context): Step {
  return {
    label: "GET /resource_providers/{uuid}/aggregates",
    request: request(c.r, "GET", `/resource_providers/${uuidOf(someProvider(c))}/aggregates`, pickVersion(c.r, 1)),
  };
}

export function putProviderTraits(c: Context): Step {
  const { r, model } = c;
  const sym = someProvider(c);
  const current = model.providers.get(sym)?.traits ?? [];
  const noop = r.chance(0.3);
  const chosen = noop ? [...current] : r.some(traits(c), 3);
  const variant = noop ? "no-op" : r.weighted<string>([[92, ""], [2, "unknown trait"], [2, "stale generation"], [2, "no generation"], [2, "garbage"]]);
  if (variant === "unknown trait") chosen.push("CUSTOM_NEVER_CREATED");
  const body: Record<string, unknown> = { traits: chosen, resource_provider_generation: generationOf(sym) };
  if (variant === "stale generation") body.resource_provider_generation = 9999;
  if (variant === "no generation") delete body.resource_provider_generation;
  return {
    label: `PUT /resource_providers/{uuid}/traits${variant ? ` [${variant}]` : ""}`,
    request: request(r, "PUT", `/resource_providers/${uuidOf(sym)}/traits`, pickVersion(r, 6), variant === "garbage" ? garbageBody(r) : body),
    touches: { traits: [sym] },
  };
}

export function deleteProviderTraits(c: Context): Step {
  const sym = someProvider(c);
  const empty = (c.model.providers.get(sym)?.traits.length ?? 0) === 0;
  return {
    label: `DELETE /resource_providers/{uuid}/traits${empty ? " [no-op]" : ""}`,
    request: request(c.r, "DELETE", `/resource_providers/${uuidOf(sym)}/traits`, pickVersion(c.r, 6)),
    touches: { traits: [sym] },
  };
}

export function getProviderTraits(c: Context): Step {
  return {
    label: "GET /resource_providers/{uuid}/traits",
    request: request(c.r, "GET", `/resource_providers/${uuidOf(someProvider(c))}/traits`, pickVersion(c.r, 6)),
  };
}

export function traitRoutes(c: Context): Step {
  const { r, model } = c;
  const v = pickVersion(r, 6);
  const kind = r.weighted<string>([[4, "put"], [3, "list"], [1, "get"], [1, "delete"]]);
  if (kind === "put") {
    const name = r.weighted<string>([
      [8, `CUSTOM_T${r.int(1, 12)}`],
      [1, "CUSTOM_lower"],
      [1, "NOT_CUSTOM"],
      [1, r.pick(STANDARD_TRAITS)],
    ]);
    return {
      label: "PUT /traits/{name}",
      request: request(r, "PUT", `/traits/${name}`, v),
      after: (ref, ours) => void (ref.status === 201 && ours.status === 201 && model.customTraits.add(name)),
    };
  }
  if (kind === "list") {
    const query = r.pick([
      "",
      "?name=startswith:CUSTOM_",
      "?name=startswith:HW_CPU_X86_SS",
      `?name=in:${r.some(traits(c), 3).join(",") || "HW_CPU_X86_SSE"}`,
      "?associated=true",
      "?associated=false&name=startswith:CUSTOM",
      "?name=bogus",
      "?associated=maybe",
    ]);
    return { label: `GET /traits${query ? ` [${query.slice(1).split(/[=:]/)[0]}]` : ""}`, request: request(r, "GET", `/traits${query}`, v), global: true };
  }
  const name = r.chance(0.7) && model.customTraits.size ? r.pick([...model.customTraits]) : r.pick([...STANDARD_TRAITS, "CUSTOM_NOPE"]);
  if (kind === "get") return { label: "GET /traits/{name}", request: request(r, "GET", `/traits/${name}`, v) };
  return {
    label: "DELETE /traits/{name}",
    request: request(r, "DELETE", `/traits/${name}`, v),
    after: (ref, ours) => void (ref.status === 204 && ours.status === 204 && model.customTraits.delete(name)),
  };
}

export function resourceClassRoutes(c: Context): Step {
  const { r, model } = c;
  const v = pickVersion(r, 2);
  const kind = r.weighted<string>([[3, "post"], [2, "put"], [2, "list"], [1, "get"], [1, "delete"]]);
  const fresh = r.weighted<string>([
    [8, `CUSTOM_C${r.int(1, 10)}`],
    [1, "GPU_A"],
    [1, "CUSTOM_lower"],
    [1, "VCPU"],
  ]);
  const created = (name: string) => (ref: Response, ours: Response) =>
    void (ref.status === 201 && ours.status === 201 && model.customClasses.add(name));
  if (kind === "post") {
    const body = r.chance(0.05) ? garbageBody(r) : { name: fresh };
    return { label: "POST /resource_classes", request: request(r, "POST", "/resource_classes", v, body), after: created(fresh) };
  }
  if (kind === "put") {
    if (v.minor >= 7) return { label: "PUT /resource_classes/{name}", request: request(r, "PUT", `/resource_classes/${fresh}`, v), after: created(fresh) };
    const renamed = `CUSTOM_R${r.int(1, 5)}`;
    return {
      label: "PUT /resource_classes/{name} [rename]",
      request: request(r, "PUT", `/resource_classes/${fresh}`, v, { name: renamed }),
      after: (ref, ours) => {
        if (ref.status !== 200 || ours.status !== 200) return;
        model.customClasses.delete(fresh);
        model.retiredClasses.add(fresh);
        model.customClasses.add(renamed);
      },
    };
  }
  if (kind === "list") return { label: "GET /resource_classes", request: request(r, "GET", "/resource_classes", v), global: true };
  const name = r.chance(0.7) && model.customClasses.size ? r.pick([...model.customClasses]) : r.pick(["VCPU", "CUSTOM_NOPE", "lower"]);
  if (kind === "get") return { label: "GET /resource_classes/{name}", request: request(r, "GET", `/resource_classes/${name}`, v) };
  return {
    label: "DELETE /resource_classes/{name}",
    request: request(r, "DELETE", `/resource_classes/${name}`, v),
    after: (ref, ours) => {
      if (ref.status !== 204 || ours.status !== 204) return;
      model.customClasses.delete(name);
      model.retiredClasses.add(name);
    },
  };
}
