/** POST /reshaper (1.30): replace inventories of several providers and allocations of several consumers at once. */
import { Hono } from "hono";
import { z } from "zod";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import type { AppContext, AppEnv, RouteDeps } from "../http/context.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { reshape } from "../services/reshaper.js";
import {
  minProperties,
  RESHAPER_ALLOCATIONS_V1_30,
  RESHAPER_ALLOCATIONS_V1_34,
  RESHAPER_ALLOCATIONS_V1_38,
  UUID_KEY,
  type ParsedConsumerBody,
} from "./allocation-schemas.js";
import { toConsumerWrite } from "./consumer-writes.js";
import { INVENTORY_RECORD, inventoryWithDefaults, RC_PATTERN } from "./inventory-schemas.js";

const PROVIDER_INVENTORIES = z.strictObject({
  resource_provider_generation: z.int(),
  inventories: z.record(z.string().regex(RC_PATTERN), INVENTORY_RECORD),
});

/** 1.30: at least one provider's inventories, and the allocations (possibly none). */
export const POST_RESHAPER_V1_30 = z.strictObject({
  inventories: minProperties(z.record(UUID_KEY, PROVIDER_INVENTORIES), 1),
  allocations: RESHAPER_ALLOCATIONS_V1_30,
});
/** 1.34: allocations may carry mappings. */
export const POST_RESHAPER_V1_34 = POST_RESHAPER_V1_30.extend({ allocations: RESHAPER_ALLOCATIONS_V1_34 });
/** 1.38: allocations need a consumer_type. */
export const POST_RESHAPER_V1_38 = POST_RESHAPER_V1_30.extend({ allocations: RESHAPER_ALLOCATIONS_V1_38 });

function schemaFor(c: AppContext) {
  const mv = c.get("microversion");
  if (mv.atLeast("1.38")) return POST_RESHAPER_V1_38;
  if (mv.atLeast("1.34")) return POST_RESHAPER_V1_34;
  return POST_RESHAPER_V1_30;
}

export function reshaperRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  declareRoute(app, "/reshaper", {
    POST: async (c) => {
      requireMicroversion(c, "1.30");
      requireJsonContent(c);
      authorize(c, "placement:reshaper:reshape");
      const body = (await readJsonBody(c, schemaFor(c))) as {
        inventories: Record<string, z.output<typeof PROVIDER_INVENTORIES>>;
        allocations: Record<string, ParsedConsumerBody>;
      };
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
