/**
 * /resource_providers/{uuid}/inventories and .../inventories/{resource_class}:
 * read, replace, add, change and remove what a provider offers.
 */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import { jsonText, pythonFloat } from "../http/python-float.js";
import { NumberToken, parseJsonText, type JsonText } from "../http/json-text.js";
import type { AppContext, AppEnv, RouteDeps } from "../http/context.js";
import { newestTimestamp, setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { requireProvider } from "../services/providers.js";
import {
  addInventory,
  deleteAllInventories,
  deleteInventory,
  getProviderInventories,
  getProviderInventory,
  replaceInventories,
  updateInventory,
  type InventoryData,
} from "../services/inventories.js";
import { absoluteUrl, providerUrl } from "../http/urls.js";
import { inventoryWithDefaults, POST_INVENTORY, PUT_INVENTORIES, PUT_INVENTORY } from "../schemas/inventories.js";

/** An inventories answer: JSON with allocation_ratio written as Placement's float. */
function sendJson(c: AppContext, body: unknown, status: 200 | 201 = 200) {
  return c.body(jsonText(body), status, { "content-type": "application/json" });
}

/**
 * Placement answers a write with the record as the client sent it, so a ratio
 * written as an integer (`16`) comes back as one; a read (and a defaulted
 * ratio) gives the stored float (`16.0`). The body is read again with its
 * number tokens (hono keeps the text), already known to be valid JSON.
 */
async function bodyAsWritten(c: AppContext): Promise<JsonText> {
  return parseJsonText(await c.req.text());
}

const member = (value: JsonText | undefined, key: string): JsonText | undefined =>
  value && typeof value === "object" && !Array.isArray(value) && !(value instanceof NumberToken) ? value[key] : undefined;

function ratioWrittenAsInteger(record: JsonText | undefined): boolean {
  const ratio = member(record, "allocation_ratio");
  return ratio instanceof NumberToken && !/[.eE]/.test(ratio.text);
}

function serializeInventory(inv: InventoryData, ratioAsInteger = false): Record<string, number | string> {
  return {
    total: inv.total,
    reserved: inv.reserved,
    min_unit: inv.minUnit,
    max_unit: inv.maxUnit,
    step_size: inv.stepSize,
    allocation_ratio: ratioAsInteger ? inv.allocationRatio : pythonFloat(inv.allocationRatio),
  };
}

/** One inventory as Placement sends it: the fields plus the provider's generation. */
function sendInventory(c: AppContext, inv: InventoryData, generation: number, status: 200 | 201 = 200, modified?: Date, ratioAsInteger = false) {
  setLastModified(c, modified ?? new Date());
  return sendJson(c, { ...serializeInventory(inv, ratioAsInteger), resource_provider_generation: generation }, status);
}

export function inventoryRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { db, store } = deps;
  const reservedMayEqualTotal = (c: AppContext) => c.get("microversion").atLeast("1.26");

  declareRoute(app, "/resource_providers/:uuid/inventories", {
    GET: async (c) => {
      authorize(c, "placement:resource_providers:inventories:list");
      const { provider, inventories: rows } = await getProviderInventories(db, c.req.param("uuid"));
      // Placement takes the newest of the inventories, with no fallback: none, no Last-Modified.
      setLastModified(c, rows.length ? newestTimestamp(rows) : null);
      return sendJson(c, {
        resource_provider_generation: provider.generation,
        inventories: Object.fromEntries(rows.map((r) => [r.resourceClass, serializeInventory(r)])),
      });
    },

    POST: async (c) => {
      requireJsonContent(c);
      authorize(c, "placement:resource_providers:inventories:create");
      const uuid = c.req.param("uuid");
      await requireProvider(db, uuid);
      const body = await readJsonBody(c, POST_INVENTORY.at(c.get("microversion")));
      const inv = inventoryWithDefaults(body);
      const generation = await addInventory(store, uuid, body.resource_class, inv, reservedMayEqualTotal(c));
      c.header("location", absoluteUrl(c, `${providerUrl(uuid)}/inventories/${body.resource_class}`));
      return sendInventory(c, inv, generation, 201, undefined, ratioWrittenAsInteger(await bodyAsWritten(c)));
    },

    PUT: async (c) => {
      requireJsonContent(c);
      authorize(c, "placement:resource_providers:inventories:update");
      const uuid = c.req.param("uuid");
      // Placement looks the provider up before it reads the body: 404 wins over 400.
      await requireProvider(db, uuid);
      const body = await readJsonBody(c, PUT_INVENTORIES.at(c.get("microversion")));
      const items = new Map(Object.entries(body.inventories).map(([rc, r]) => [rc, inventoryWithDefaults(r)]));
      const generation = await replaceInventories(store, uuid, body.resource_provider_generation, items, reservedMayEqualTotal(c));
      setLastModified(c, items.size ? new Date() : null);
      const written = await bodyAsWritten(c);
      return sendJson(c, {
        resource_provider_generation: generation,
        inventories: Object.fromEntries(
          [...items].map(([rc, inv]) => [rc, serializeInventory(inv, ratioWrittenAsInteger(member(member(written, "inventories"), rc)))]),
        ),
      });
    },

    DELETE: async (c) => {
      requireMicroversion(c, "1.5", 405);
      authorize(c, "placement:resource_providers:inventories:delete");
      const uuid = c.req.param("uuid");
      await deleteAllInventories(store, uuid);
      return c.body(null, 204);
    },
  });

  declareRoute(app, "/resource_providers/:uuid/inventories/:resource_class", {
    GET: async (c) => {
      authorize(c, "placement:resource_providers:inventories:show");
      const { provider, inventory } = await getProviderInventory(db, c.req.param("uuid"), c.req.param("resource_class"));
      return sendInventory(c, inventory, provider.generation, 200, newestTimestamp([inventory]));
    },

    PUT: async (c) => {
      requireJsonContent(c);
      authorize(c, "placement:resource_providers:inventories:update");
      const uuid = c.req.param("uuid");
      const rc = c.req.param("resource_class");
      await requireProvider(db, uuid);
      const body = await readJsonBody(c, PUT_INVENTORY.at(c.get("microversion")));
      const inv = inventoryWithDefaults(body);
      const generation = await updateInventory(store, uuid, body.resource_provider_generation, rc, inv, reservedMayEqualTotal(c));
      return sendInventory(c, inv, generation, 200, undefined, ratioWrittenAsInteger(await bodyAsWritten(c)));
    },

    DELETE: async (c) => {
      authorize(c, "placement:resource_providers:inventories:delete");
      const uuid = c.req.param("uuid");
      const rc = c.req.param("resource_class");
      await deleteInventory(store, uuid, rc);
      return c.body(null, 204);
    },
  });

  return app;
}
