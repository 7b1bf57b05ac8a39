/** POST /reshaper (1.30): replace inventories of several providers and allocations of several consumers at once. */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { inventoryWithDefaults } from "../schemas/inventories.js";
import { POST_RESHAPER, type ParsedReshape } from "../schemas/reshaper.js";
import { reshape } from "../services/reshaper.js";
import { toConsumerWrite } from "./consumer-writes.js";

export function reshaperRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  declareRoute(app, "/reshaper", {
    POST: async (c) => {
      requireMicroversion(c, "1.30");
      requireJsonContent(c);
      authorize(c, "placement:reshaper:reshape");
      const body: ParsedReshape = await readJsonBody(c, POST_RESHAPER.at(c.get("microversion")));
      const inventories = Object.entries(body.inventories).map(([providerUuid, p]) => ({
        providerUuid,
        generation: p.resource_provider_generation,
        inventories: new Map(Object.entries(p.inventories).map(([rc, r]) => [rc, inventoryWithDefaults(r)])),
      }));
      const allocations = Object.entries(body.allocations).map(([uuid, a]) => toConsumerWrite(c, deps.config, uuid, a));
      await reshape(deps.store, inventories, allocations);
      return c.body(null, 204);
    },
  });

  return app;
}
