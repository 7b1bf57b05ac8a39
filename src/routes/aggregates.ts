/**
 * /resource_providers/{uuid}/aggregates (from 1.1): a bare list of aggregate
 * uuids until 1.18; from 1.19 an object that also carries the provider
 * generation, which a PUT must match and then bumps.
 */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import type { AppContext, AppEnv, RouteDeps } from "../http/context.js";
import { badRequest } from "../http/errors.js";
import { setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { PUT_AGGREGATES } from "../schemas/aggregates.js";
import { getProviderAggregates, setProviderAggregates } from "../services/aggregates.js";
import { requireProvider } from "../services/providers.js";

/**
 * Aggregates are stored as written, in 36 characters. The longer spellings
 * is_uuid_like also takes ("urn:uuid:...", "{...}") overflow Placement's
 * column (a 500 there, docs/placement-bugs.md); here they are a 400.
 */
function storableAggregates(uuids: string[]): string[] {
  const long = uuids.find((u) => u.length > 36);
  if (long !== undefined) {
    throw badRequest(`Invalid aggregate uuid ${long}: write aggregate uuids as 36 characters, 8-4-4-4-12 hex digits with hyphens.`);
  }
  return uuids;
}

function sendAggregates(c: AppContext, uuids: string[], generation: number) {
  // Membership changes carry no timestamp of their own: Placement sends now.
  setLastModified(c, new Date());
  const body: Record<string, unknown> = { aggregates: uuids };
  if (c.get("microversion").atLeast("1.19")) body.resource_provider_generation = generation;
  return c.json(body);
}

export function aggregateRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { db, store } = deps;

  declareRoute(app, "/resource_providers/:uuid/aggregates", {
    GET: async (c) => {
      requireMicroversion(c, "1.1");
      authorize(c, "placement:resource_providers:aggregates:list");
      const { provider, aggregates } = await getProviderAggregates(db, c.req.param("uuid"));
      return sendAggregates(c, aggregates, provider.generation);
    },

    PUT: async (c) => {
      requireMicroversion(c, "1.1");
      requireJsonContent(c);
      authorize(c, "placement:resource_providers:aggregates:update");
      const uuid = c.req.param("uuid");
      // Placement looks the provider up before it reads the body: 404 wins over 400.
      await requireProvider(db, uuid);
      const body = await readJsonBody(c, PUT_AGGREGATES.at(c.get("microversion")));
      // Before 1.19 the body is the bare list, and no generation is checked.
      const uuids = Array.isArray(body) ? body : body.aggregates;
      const expected = Array.isArray(body) ? undefined : body.resource_provider_generation;
      const generation = await setProviderAggregates(store, uuid, storableAggregates(uuids), expected);
      return sendAggregates(c, uuids, generation);
    },
  });

  return app;
}
