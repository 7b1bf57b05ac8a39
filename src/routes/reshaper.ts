/** POST /reshaper (1.30): replace inventories of several providers and allocations of several consumers at once. */
import { Hono } from "hono";
import { z } from "zod";
import { authorize } from "../auth/policy.js";
import { inTransaction, isRetryable } from "../db/database.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import type { AppContext, AppDeps, AppEnv } from "../http/context.js";
import { badRequest, conflict, ErrorCode } from "../http/errors.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { ResourceClassNotFound } from "../services/allocations.js";
import { reshape } from "../services/reshaper.js";
import {
  minProperties,
  RESHAPER_ALLOCATIONS_V1_30,
  RESHAPER_ALLOCATIONS_V1_34,
  RESHAPER_ALLOCATIONS_V1_38,
  UUID_KEY,
  type ParsedConsumerBody,
} from "./allocation-schemas.js";
import { toConsumerWrite } from "./allocations.js";
import { INVENTORY_RECORD, inventoryWithDefaults, RC_PATTERN } from "./inventory-schemas.js";

const PROVIDER_INVENTORIES = z.strictObject({
  resource_provider_generation: z.int(),
  inventories: z.record(z.string().regex(RC_PATTERN), INVENTORY_RECORD),
});

/** 1.30: at least one provider's inventories, and the allocations (possibly none). */
const POST_RESHAPER_V1_30 = z.strictObject({
  inventories: minProperties(z.record(UUID_KEY, PROVIDER_INVENTORIES), 1),
  allocations: RESHAPER_ALLOCATIONS_V1_30,
});
/** 1.34: allocations may carry mappings. */
const POST_RESHAPER_V1_34 = POST_RESHAPER_V1_30.extend({ allocations: RESHAPER_ALLOCATIONS_V1_34 });
/** 1.38: allocations need a consumer_type. */
const POST_RESHAPER_V1_38 = POST_RESHAPER_V1_30.extend({ allocations: RESHAPER_ALLOCATIONS_V1_38 });

function schemaFor(c: AppContext) {
  const mv = c.get("microversion");
  if (mv.atLeast("1.38")) return POST_RESHAPER_V1_38;
  if (mv.atLeast("1.34")) return POST_RESHAPER_V1_34;
  return POST_RESHAPER_V1_30;
}

export function reshaperRoutes(deps: AppDeps): Hono<AppEnv> {
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
      try {
        await inTransaction(deps.db, (tx) => reshape(tx, inventories, allocations), deps.config.PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT);
      } catch (err) {
        if (err instanceof ResourceClassNotFound) throw badRequest(`malformed reshaper data: ${err.message}`);
        // Retries exhausted on deadlocks: Placement's 409 for a concurrent update, not a 500.
        if (isRetryable(err)) {
          throw conflict("update conflict: Another thread concurrently updated the data. Please retry your update", ErrorCode.CONCURRENT_UPDATE);
        }
        throw err;
      }
      return c.body(null, 204);
    },
  });

  return app;
}
