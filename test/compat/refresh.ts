/**
 * Re-reads what a write may have changed, on both sides. The reads are
 * compared like any other request (that is how a generation is checked after
 * every write); the model takes the reference's answer when both agree, and
 * each side keeps its own generations.
 */
import type { Inventory, Model } from "./model.js";
import type { Request, Response, SideState } from "./request.js";
import { uuidOf } from "./request.js";

export type RefreshKind = "providers" | "inventories" | "traits" | "aggregates" | "consumers";

const LATEST = { "x-auth-token": "admin", "openstack-api-version": "placement 1.39", accept: "application/json" };

export function refreshRequest(kind: RefreshKind, sym: string): { label: string; request: Request } {
  const base = `/resource_providers/${uuidOf(sym)}`;
  const [label, path] = {
    providers: ["refresh GET /resource_providers/{uuid}", base],
    inventories: ["refresh GET /resource_providers/{uuid}/inventories", `${base}/inventories`],
    traits: ["refresh GET /resource_providers/{uuid}/traits", `${base}/traits`],
    aggregates: ["refresh GET /resource_providers/{uuid}/aggregates", `${base}/aggregates`],
    consumers: ["refresh GET /allocations/{consumer}", `/allocations/${sym}`],
  }[kind];
  return { label, request: { method: "GET", path, headers: LATEST } };
}

/** A uuid (or a symbolised server-chosen uuid) back to the workload's symbol. */
const symOf = (value: string): string => value.replace(/^⟦u:(.*)⟧$/, "$1");

/** Updates the model and each side's generations from answers both sides agreed on. */
export function applyRefresh(
  kind: RefreshKind,
  sym: string,
  model: Model,
  answers: Array<[SideState, Response, string]>,
): void {
  const [, reference, referenceText] = answers[0];
  if (reference.status === 404) {
    if (kind === "consumers") model.consumers.delete(sym);
    else model.providers.delete(sym);
    return;
  }
  if (reference.status !== 200) return;
  const body = JSON.parse(referenceText);
  if (kind === "consumers") {
    for (const [side, , text] of answers) {
      const own = JSON.parse(text);
      side.consumerGenerations.set(sym, own.consumer_generation ?? null);
    }
    const allocations = Object.entries(body.allocations ?? {}) as Array<[string, { resources: Record<string, number> }]>;
    if (allocations.length === 0) {
      model.consumers.delete(sym);
      return;
    }
    model.consumers.set(sym, {
      sym,
      project: body.project_id,
      user: body.user_id,
      allocations: new Map(allocations.map(([p, a]) => [symOf(p), a.resources])),
    });
    return;
  }
  for (const [side, , text] of answers) {
    const own = JSON.parse(text);
    side.providerGenerations.set(sym, own.generation ?? own.resource_provider_generation);
  }
  let provider = model.providers.get(sym);
  if (kind === "providers") {
    const parent = body.parent_provider_uuid ? symOf(body.parent_provider_uuid) : undefined;
    const root = symOf(body.root_provider_uuid);
    if (!provider) {
      provider = { sym, name: body.name, parent, root, inventories: new Map(), traits: [], aggregates: [] };
      model.providers.set(sym, provider);
    }
    Object.assign(provider, { name: body.name, parent, root });
    // A reparented provider moves its descendants' root along with it.
    for (let depth = 0; depth < 8; depth++) {
      for (const p of model.providers.values()) if (p.parent && model.providers.get(p.parent)) p.root = model.providers.get(p.parent)!.root;
    }
    return;
  }
  if (!provider) return;
  if (kind === "inventories") provider.inventories = new Map(Object.entries(body.inventories) as Array<[string, Inventory]>);
  if (kind === "traits") provider.traits = body.traits;
  if (kind === "aggregates") provider.aggregates = body.aggregates;
}
