/** Workload steps for allocations, usages, reshapes and allocation candidates. */
import type { Consumer, Provider, Step } from "./model.js";
import { consumerGenerationOf, uuidOf, type Request } from "./request.js";
import { CONSUMER_TYPES, garbageBody, pickVersion, PROJECTS, request, USERS, type Version } from "./vocabulary.js";
import { AGGREGATES, classes, someProvider, traits, type Context } from "./workload-providers.js";

/** provider sym -> class -> amount */
type Allocation = Map<string, Record<string, number>>;

function capacity(p: Provider, rc: string): number {
  const inv = p.inventories.get(rc);
  return inv ? Math.floor((inv.total - inv.reserved) * inv.allocation_ratio) : 0;
}

/** An allocation that mostly fits: a few classes from one tree and perhaps a sharing provider. */
function someAllocation(c: Context): { allocation: Allocation; variant: string } {
  const { r, model } = c;
  const allocation: Allocation = new Map();
  const withInventory = [...model.providers.values()].filter((p) => p.inventories.size > 0);
  for (const p of r.some(withInventory, 2)) {
    const resources: Record<string, number> = {};
    for (const rc of r.some([...p.inventories.keys()], 2)) {
      const inv = p.inventories.get(rc)!;
      const most = Math.max(inv.min_unit, Math.min(inv.max_unit, capacity(p, rc)));
      const amount = Math.max(inv.min_unit, Math.floor(r.int(inv.min_unit, Math.max(inv.min_unit, Math.ceil(most / 4))) / inv.step_size) * inv.step_size);
      resources[rc] = amount;
    }
    if (Object.keys(resources).length) allocation.set(p.sym, resources);
  }
  const variant = r.weighted<string>([
    [82, ""],
    [3, "over capacity"],
    [3, "unknown provider"],
    [2, "class not in inventory"],
    [2, "amount 0"],
    [1, "negative amount"],
    [2, "empty resources"],
    [1, "float amount"],
  ]);
  const first = [...allocation.keys()][0];
  if (variant === "over capacity" && first) allocation.get(first)![Object.keys(allocation.get(first)!)[0]] = 1_000_000;
  if (variant === "unknown provider") allocation.set(r.uuid(), { VCPU: 1 });
  if (variant === "class not in inventory" && first) allocation.get(first)!.CUSTOM_NOT_HERE = 1;
  if (variant === "amount 0" && first) allocation.get(first)![Object.keys(allocation.get(first)!)[0]] = 0;
  if (variant === "negative amount" && first) allocation.get(first)![Object.keys(allocation.get(first)!)[0]] = -1;
  if (variant === "empty resources" && first) allocation.set(first, {});
  if (variant === "float amount" && first) allocation.get(first)![Object.keys(allocation.get(first)!)[0]] = 1.5;
  return { allocation, variant };
}

/** The allocations body of PUT /allocations/{c} (or one consumer's entry of POST /allocations) for a version. */
function consumerBody(c: Context, v: Version, consumer: string, allocation: Allocation, owner: { project: string; user: string }): Record<string, unknown> {
  const { r } = c;
  const body: Record<string, unknown> = {};
  if (v.minor >= 12) {
    body.allocations = Object.fromEntries([...allocation].map(([p, resources]) => [uuidOf(p), { resources }]));
  } else {
    body.allocations = [...allocation].map(([p, resources]) => ({ resource_provider: { uuid: uuidOf(p) }, resources }));
  }
  if (v.minor >= 8 || r.chance(0.1)) Object.assign(body, { project_id: owner.project, user_id: owner.user });
  if (v.minor >= 28 && r.chance(0.97)) body.consumer_generation = r.chance(0.03) ? 9999 : consumerGenerationOf(consumer);
  if (v.minor >= 38 && r.chance(0.97)) body.consumer_type = r.pick(CONSUMER_TYPES);
  return body;
}

function ownerOf(c: Context, consumer: Consumer | undefined) {
  return consumer && c.r.chance(0.9) ? { project: consumer.project, user: consumer.user } : { project: c.r.pick(PROJECTS), user: c.r.pick(USERS) };
}

function someConsumer(c: Context): { sym: string; consumer?: Consumer } {
  const existing = [...c.model.consumers.values()];
  if (existing.length && c.r.chance(0.6)) {
    const consumer = c.r.pick(existing);
    return { sym: consumer.sym, consumer };
  }
  return { sym: c.r.uuid() };
}

const providersTouched = (...allocations: (Allocation | undefined)[]) =>
  [...new Set(allocations.flatMap((a) => (a ? [...a.keys()] : [])))];

export function putAllocations(c: Context): Step {
  const { r } = c;
  const v = pickVersion(r);
  const { sym, consumer } = someConsumer(c);
  const { allocation, variant } = someAllocation(c);
  const emptying = allocation.size === 0 || (v.minor >= 28 && r.chance(0.05));
  const body = consumerBody(c, v, sym, emptying ? new Map() : allocation, ownerOf(c, consumer));
  const labels = [consumer ? "existing consumer" : "new consumer", emptying ? "empty" : variant].filter(Boolean);
  return {
    label: `PUT /allocations/{consumer} [${labels.join(", ")}]`,
    request: request(r, "PUT", `/allocations/${sym}`, v, r.chance(0.03) ? garbageBody(r) : body),
    touches: { providers: providersTouched(allocation, consumer?.allocations), consumers: [sym] },
  };
}

/** A move as Nova makes it: the instance's allocation goes to a new host, the migration consumer keeps the old one. */
export function postAllocations(c: Context): Step {
  const { r, model } = c;
  const v = pickVersion(r, 13);
  const instance = someConsumer(c);
  const migration = r.uuid();
  const { allocation, variant } = someAllocation(c);
  const owner = ownerOf(c, instance.consumer);
  const body: Record<string, unknown> = {
    [uuidOf(instance.sym)]: consumerBody(c, { ...v, minor: Math.max(v.minor, 12) }, instance.sym, allocation, owner),
  };
  if (instance.consumer) {
    body[migration] = consumerBody(c, { ...v, minor: Math.max(v.minor, 12) }, migration, instance.consumer.allocations, owner);
  }
  if (r.chance(0.05) && model.consumers.size > 1) {
    const other = r.pick([...model.consumers.values()]);
    body[uuidOf(other.sym)] = consumerBody(c, { ...v, minor: Math.max(v.minor, 12) }, other.sym, new Map(), owner);
  }
  const consumers = Object.keys(body).map((k) => k.replace(/^⟦u:(.*)⟧$/, "$1"));
  const touchedAllocations = consumers.map((s) => model.consumers.get(s)?.allocations);
  return {
    label: `POST /allocations [${instance.consumer ? "move" : "new"}${variant ? `, ${variant}` : ""}]`,
    request: request(r, "POST", "/allocations", v, r.chance(0.03) ? garbageBody(r) : body),
    touches: { providers: providersTouched(allocation, ...touchedAllocations), consumers },
  };
}

export function allocationReads(c: Context): Step {
  const { r } = c;
  if (r.chance(0.4)) {
    return {
      label: "GET /resource_providers/{uuid}/allocations",
      request: request(r, "GET", `/resource_providers/${uuidOf(someProvider(c))}/allocations`, pickVersion(r)),
    };
  }
  const { sym } = someConsumer(c);
  return { label: "GET /allocations/{consumer}", request: request(r, "GET", `/allocations/${sym}`, pickVersion(r)) };
}

export function deleteAllocations(c: Context): Step {
  const { sym, consumer } = someConsumer(c);
  return {
    label: "DELETE /allocations/{consumer}",
    request: request(c.r, "DELETE", `/allocations/${sym}`, pickVersion(c.r)),
    touches: { providers: providersTouched(consumer?.allocations), consumers: [sym] },
  };
}

/** Placement leaves a consumer behind after refusing an unknown provider; the client's retry then differs (docs/placement-bugs.md). */
export function retryAfterUnknownProvider(c: Context): Step[] {
  const { r } = c;
  const sym = r.uuid();
  const owner = { project: r.pick(PROJECTS), user: r.pick(USERS) };
  const v: Version = { minor: 39, header: "placement 1.39" };
  const { allocation, variant } = someAllocation(c);
  if (variant) return [];
  const bad = new Map(allocation).set(r.uuid(), { VCPU: 1 });
  const put = (a: Allocation, consumerGeneration: number | null = null): Request => ({
    method: "PUT",
    path: `/allocations/${sym}`,
    headers: { "x-auth-token": "admin", "openstack-api-version": v.header!, "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify({
      allocations: Object.fromEntries([...a].map(([p, resources]) => [uuidOf(p), { resources }])),
      project_id: owner.project,
      user_id: owner.user,
      consumer_generation: consumerGeneration,
      consumer_type: "INSTANCE",
    }),
  });
  if (allocation.size === 0) return [];
  return [
    { label: "PUT /allocations/{consumer} [unknown provider, new consumer]", request: put(bad) },
    {
      label: "PUT /allocations/{consumer} [retry after unknown provider]",
      request: put(allocation),
      cleanup: [{ method: "DELETE", path: `/allocations/${sym}`, headers: { "x-auth-token": "admin", "openstack-api-version": "placement 1.39" } }],
      // The retry the phantom consumer refused, with the generation it expects: the reference now writes
      // (and the cleanup removes) the allocation ours wrote, so each provider is bumped as often on both sides.
      referenceCleanup: [put(allocation, 0)],
    },
  ];
}

export function usages(c: Context): Step {
  const { r } = c;
  if (r.chance(0.4)) {
    return {
      label: "GET /resource_providers/{uuid}/usages",
      request: request(r, "GET", `/resource_providers/${uuidOf(someProvider(c))}/usages`, pickVersion(r)),
    };
  }
  const v = pickVersion(r, 9);
  const params = [`project_id=${r.pick(PROJECTS)}`];
  if (r.chance(0.4)) params.push(`user_id=${r.pick(USERS)}`);
  if (r.chance(0.05)) params.push(`project_id=${r.pick(PROJECTS)}`);
  if (v.minor >= 38 && r.chance(0.3)) params.push(`consumer_type=${r.pick([...CONSUMER_TYPES, "all", "unknown", "ALL"])}`);
  if (r.chance(0.05)) params.splice(0, 1);
  return { label: "GET /usages", request: request(r, "GET", `/usages?${params.join("&")}`, v), global: true };
}

/** Moves one class of a provider to a child with its allocations, as Nova does when a host gains NUMA nodes. */
export function reshape(c: Context): Step | null {
  const { r, model } = c;
  const v = pickVersion(r, 30);
  const parents = [...model.providers.values()].filter((p) => p.inventories.size > 0 && model.children(p.sym).length > 0);
  if (!parents.length) return null;
  const from = r.pick(parents);
  const to = r.pick(model.children(from.sym));
  const rc = r.pick([...from.inventories.keys()]);
  const moved = from.inventories.get(rc)!;
  const inventoriesOf = (p: Provider, add?: [string, unknown], drop?: string) => {
    const out: Record<string, unknown> = {};
    for (const [k, inv] of p.inventories) if (k !== drop) out[k] = { ...inv };
    if (add) out[add[0]] = add[1];
    return out;
  };
  const inventories = {
    [uuidOf(from.sym)]: { resource_provider_generation: `⟦g:${from.sym}⟧`, inventories: inventoriesOf(from, undefined, rc) },
    [uuidOf(to.sym)]: { resource_provider_generation: `⟦g:${to.sym}⟧`, inventories: inventoriesOf(to, [rc, { ...moved }]) },
  };
  const allocations: Record<string, unknown> = {};
  const consumers: string[] = [];
  const touched = new Set([from.sym, to.sym]);
  for (const consumer of model.consumers.values()) {
    if (!consumer.allocations.has(from.sym) && !consumer.allocations.has(to.sym)) continue;
    const next: Allocation = new Map([...consumer.allocations].map(([p, res]) => [p, { ...res }]));
    const amount = next.get(from.sym)?.[rc];
    if (amount !== undefined) {
      delete next.get(from.sym)![rc];
      if (Object.keys(next.get(from.sym)!).length === 0) next.delete(from.sym);
      next.set(to.sym, { ...(next.get(to.sym) ?? {}), [rc]: (next.get(to.sym)?.[rc] ?? 0) + amount });
    }
    for (const p of next.keys()) touched.add(p);
    allocations[uuidOf(consumer.sym)] = consumerBody(c, { ...v, minor: Math.max(v.minor, 28) }, consumer.sym, next, consumer);
    consumers.push(consumer.sym);
  }
  const variant = r.weighted<string>([[90, ""], [4, "stale generation"], [3, "garbage"], [3, "missing allocations"]]);
  if (variant === "stale generation") (inventories[uuidOf(from.sym)] as Record<string, unknown>).resource_provider_generation = 9999;
  const body = variant === "garbage" ? garbageBody(r) : variant === "missing allocations" ? { inventories } : { inventories, allocations };
  return {
    label: `POST /reshaper${variant ? ` [${variant}]` : ""}`,
    request: request(r, "POST", "/reshaper", v, body),
    touches: { inventories: [from.sym, to.sym], providers: [...touched], consumers },
  };
}

export function candidates(c: Context): Step {
  const { r, model } = c;
  const v = pickVersion(r, 10);
  const params: string[] = [];
  const amount = () => r.pick([1, 1, 2, 4, 10, 100]);
  const resources = (n: number) => r.some(classes(c), n).map((rc) => `${rc}:${amount()}`).join(",") || "VCPU:1";
  const labels: string[] = [];
  params.push(`resources=${resources(2)}`);
  // A client with a stale list of classes asks for one that was renamed or deleted.
  if (model.retiredClasses.size && r.chance(0.05)) params[0] += `,${r.pick([...model.retiredClasses])}:1`;
  if (v.minor >= 25 && r.chance(0.4)) {
    const groups = r.int(1, 3);
    for (let g = 1; g <= groups; g++) params.push(`resources${g}=${resources(1)}`);
    if (groups > 1 || r.chance(0.3)) params.push(`group_policy=${r.pick(["none", "isolate"])}`);
    labels.push("granular");
    if (v.minor >= 36 && groups > 1 && r.chance(0.3)) params.push("same_subtree=_1,_2");
  }
  if (v.minor >= 17 && r.chance(0.3)) {
    params.push(`required=${r.some(traits(c), 2).map((t) => (v.minor >= 22 && r.chance(0.3) ? "!" + t : t)).join(",") || "HW_CPU_X86_SSE"}`);
    labels.push("required");
  }
  if (v.minor >= 21 && r.chance(0.2)) params.push(`member_of=${r.chance(0.5) ? "in:" + r.some(AGGREGATES, 2).join(",") : r.pick(AGGREGATES)}`);
  if (v.minor >= 16 && r.chance(0.2)) params.push(`limit=${r.int(1, 5)}`);
  const roots = [...model.providers.values()].filter((p) => p.root === p.sym);
  if (v.minor >= 31 && roots.length && r.chance(0.2)) params.push(`in_tree=${uuidOf(r.pick(roots).sym)}`);
  if (v.minor >= 35 && r.chance(0.15)) params.push(`root_required=${r.pick(["HW_NUMA_ROOT", "!HW_NUMA_ROOT", "CUSTOM_T1"])}`);
  if (r.chance(0.06)) {
    const bad = r.pick(["resources=VCPU:0", "resources=NOPE:1", "resources=", "group_policy=bogus", "limit=0", "required=lower", "resources1=VCPU:1&resources2=DISK_GB:1"]);
    params.push(bad);
    labels.push(`bad ${bad.split("=")[0]}`);
  }
  if (r.chance(0.03)) params.splice(0, 1);
  return {
    label: `GET /allocation_candidates${labels.length ? ` [${labels.join(", ")}]` : ""}`,
    request: request(r, "GET", `/allocation_candidates?${params.join("&")}`, v),
    global: true,
  };
}

export function miscellany(c: Context): Step {
  const { r } = c;
  const v = pickVersion(r);
  const [method, path] = r.pick([
    ["GET", "/"],
    ["PATCH", "/resource_providers"],
    ["DELETE", "/resource_providers"],
    ["HEAD", "/resource_providers"],
    ["POST", "/traits"],
    ["GET", "/nothing/here"],
    ["PUT", "/allocations"],
    ["GET", "/resource_providers/"],
    ["POST", `/resource_providers/${uuidOf(someProvider(c))}`],
  ] as const);
  return { label: `${method} ${path.replace(/\/resource_providers\/.+$/, "/resource_providers/{uuid}")} [method or route]`, request: request(r, method, path, v) };
}
