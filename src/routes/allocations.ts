/**
 * /allocations/{consumer_uuid} (GET, PUT, DELETE), POST /allocations (1.13)
 * and GET /resource_providers/{uuid}/allocations.
 */
import { Hono } from "hono";
import type { z } from "zod";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { badRequest } from "../http/errors.js";
import { newestTimestamp, setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import {
  deleteConsumerAllocations,
  getConsumerAllocations,
  getProviderAllocations,
  setAllocations,
  setConsumerAllocations,
} from "../services/allocations.js";
import { parseUuid } from "../http/uuid.js";
import { POST_ALLOCATIONS, PUT_ALLOCATIONS, type ParsedConsumerBody } from "../schemas/allocations.js";
import { toConsumerWrite } from "./consumer-writes.js";

/** The list form of 1.0 - 1.11 as the dict form of 1.12 (a repeated provider: the last entry wins, as in Placement). */
function inDictForm(body: z.output<ReturnType<typeof PUT_ALLOCATIONS.at>>): ParsedConsumerBody {
  const { allocations } = body;
  if (!Array.isArray(allocations)) return { ...body, allocations };
  return { ...body, allocations: Object.fromEntries(allocations.map((a) => [a.resource_provider.uuid, { resources: a.resources }])) };
}

export function allocationRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  declareRoute(app, "/allocations", {
    POST: async (c) => {
      // The version gate comes first, as in Placement: before 1.13 this route does not exist at all.
      requireMicroversion(c, "1.13");
      requireJsonContent(c);
      authorize(c, "placement:allocations:manage");
      const body: Record<string, ParsedConsumerBody> = await readJsonBody(c, POST_ALLOCATIONS.at(c.get("microversion")));
      const writes = Object.entries(body).map(([uuid, consumer]) => toConsumerWrite(c, deps.config, uuid, consumer));
      await setAllocations(deps.store, writes);
      return c.body(null, 204);
    },
  });

  declareRoute(app, "/allocations/:consumer_uuid", {
    GET: async (c) => {
      authorize(c, "placement:allocations:list");
      const mv = c.get("microversion");
      const found = await getConsumerAllocations(deps.db, c.req.param("consumer_uuid"));
      // Members in Placement's order: resources, then generation.
      const allocations: Record<string, { resources: Record<string, number>; generation: number }> = {};
      for (const a of found?.allocations ?? []) {
        const entry = (allocations[a.providerUuid] ??= { resources: {}, generation: a.providerGeneration });
        entry.resources[a.className] = a.used;
      }
      const out: Record<string, unknown> = { allocations };
      // Who the consumer belongs to is shown only when it holds something, as in Placement.
      if (found && mv.atLeast("1.12")) {
        out.project_id = found.projectId;
        out.user_id = found.userId;
        if (mv.atLeast("1.28")) out.consumer_generation = found.consumerGeneration;
        if (mv.atLeast("1.38")) out.consumer_type = found.consumerType ?? "unknown";
      }
      setLastModified(c, newestTimestamp(found?.allocations ?? []));
      return c.json(out);
    },
    PUT: async (c) => {
      requireJsonContent(c);
      authorize(c, "placement:allocations:update");
      const raw = c.req.param("consumer_uuid");
      const consumerUuid = parseUuid(raw);
      if (!consumerUuid) throw badRequest(`Malformed consumer_uuid: ${raw}`);
      const parsed = await readJsonBody(c, PUT_ALLOCATIONS.at(c.get("microversion")));
      const write = toConsumerWrite(c, deps.config, consumerUuid, inDictForm(parsed));
      await setConsumerAllocations(deps.store, write);
      return c.body(null, 204);
    },
    DELETE: async (c) => {
      authorize(c, "placement:allocations:delete");
      await deleteConsumerAllocations(deps.store, c.req.param("consumer_uuid"));
      return c.body(null, 204);
    },
  });

  declareRoute(app, "/resource_providers/:uuid/allocations", {
    GET: async (c) => {
      authorize(c, "placement:resource_providers:allocations:list");
      const { provider, allocations: rows } = await getProviderAllocations(deps.db, c.req.param("uuid"));
      const showGeneration = c.get("microversion").atLeast("1.28");
      const allocations: Record<string, { resources: Record<string, number>; consumer_generation?: number }> = {};
      for (const a of rows) {
        const entry = (allocations[a.consumerUuid] ??= showGeneration ? { resources: {}, consumer_generation: a.consumerGeneration } : { resources: {} });
        entry.resources[a.className] = a.used;
      }
      setLastModified(c, newestTimestamp(rows));
      return c.json({ allocations, resource_provider_generation: provider.generation });
    },
  });

  return app;
}
