/**
 * /resource_providers/{uuid}/inventories and .../inventories/{resource_class}:
 * read, replace, add, change and remove what a provider offers.
 */
import { Hono } from "hono";
import { z } from "zod";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import { zInteger } from "../http/json-types.js";
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
import { INVENTORY_RECORD, inventoryWithDefaults, RC_PATTERN } from "./inventory-schemas.js";

/** PUT .../inventories/{rc}: the record plus the generation the client saw. */
const PUT_INVENTORY = INVENTORY_RECORD.extend({ resource_provider_generation: zInteger() });
/** POST .../inventories: the record plus its class. */
const POST_INVENTORY = INVENTORY_RECORD.extend({ resource_class: z.string().regex(RC_PATTERN) });
/** PUT .../inventories: every record by class, with the generation. */
const PUT_INVENTORIES = z.strictObject({
  resource_provider_generation: zInteger(),
  // patternProperties without additionalProperties: false, as in Placement, so
  // a malformed class name is not a schema error but an unknown class (400).
  inventories: z.record(z.string(), INVENTORY_RECORD),
});

function serializeInventory(inv: InventoryData): Record<string, number> {
  return {
    total: inv.total,
    reserved: inv.reserved,
    min_unit: inv.minUnit,
    max_unit: inv.maxUnit,
    step_size: inv.stepSize,
    allocation_ratio: inv.allocationRatio,
  };
}

/** One inventory as Placement sends it: the fields plus the provider's generation. */
function sendInventory(c: AppContext, inv: InventoryData, generation: number, status: 200 | 201 = 200, modified?: Date) {
  setLastModified(c, modified ?? new Date());
  return c.json({ ...serializeInventory(inv), resource_provider_generation: generation }, status);
}

export function inventoryRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { db, store } = deps;
  const reservedMayEqualTotal = (c: AppContext) => c.get("microversion").atLeast("1.26");

  declareRoute(app, "/resource_providers/:uuid/inventories", {
    GET: async (c) => {
      authorize(c, "placement:resource_providers:inventories:list");
      const { provider, inventories: rows } = await getProviderInventories(db, c.req.param("uuid"));
      setLastModified(c, newestTimestamp(rows));
      return c.json({
        resource_provider_generation: provider.generation,
        inventories: Object.fromEntries(rows.map((r) => [r.resourceClass, serializeInventory(r)])),
      });
    },

    POST: async (c) => {
      authorize(c, "placement:resource_providers:inventories:create");
      requireJsonContent(c);
      const uuid = c.req.param("uuid");
      await requireProvider(db, uuid);
      const body = await readJsonBody(c, POST_INVENTORY);
      const inv = inventoryWithDefaults(body);
      const generation = await addInventory(store, uuid, body.resource_class, inv, reservedMayEqualTotal(c));
      c.header("location", absoluteUrl(c, `${providerUrl(uuid)}/inventories/${body.resource_class}`));
      return sendInventory(c, inv, generation, 201);
    },

    PUT: async (c) => {
      authorize(c, "placement:resource_providers:inventories:update");
      requireJsonContent(c);
      const uuid = c.req.param("uuid");
      // Placement looks the provider up before it reads the body: 404 wins over 400.
      await requireProvider(db, uuid);
      const body = await readJsonBody(c, PUT_INVENTORIES);
      const items = new Map(Object.entries(body.inventories).map(([rc, r]) => [rc, inventoryWithDefaults(r)]));
      const generation = await replaceInventories(store, uuid, body.resource_provider_generation, items, reservedMayEqualTotal(c));
      setLastModified(c, new Date());
      return c.json({
        resource_provider_generation: generation,
        inventories: Object.fromEntries([...items].map(([rc, inv]) => [rc, serializeInventory(inv)])),
      });
    },

    DELETE: async (c) => {
      requireMicroversion(c, "1.5", 405, ["GET", "POST", "PUT"]);
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
      authorize(c, "placement:resource_providers:inventories:update");
      requireJsonContent(c);
      const uuid = c.req.param("uuid");
      const rc = c.req.param("resource_class");
      await requireProvider(db, uuid);
      const body = await readJsonBody(c, PUT_INVENTORY);
      const inv = inventoryWithDefaults(body);
      const generation = await updateInventory(store, uuid, body.resource_provider_generation, rc, inv, reservedMayEqualTotal(c));
      return sendInventory(c, inv, generation);
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
