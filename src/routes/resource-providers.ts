/**
 * /resource_providers and /resource_providers/{uuid}: create, list, show,
 * rename / re-parent and delete providers, per microversion.
 */
import { randomUUID } from "node:crypto";
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import type { AppContext, AppEnv, RouteDeps } from "../http/context.js";
import { newestTimestamp, setLastModified } from "../http/last-modified.js";
import { declareRoute } from "../http/routing.js";
import { absoluteUrl, providerUrl } from "../http/urls.js";
import { canonicalUuid } from "../http/uuid.js";
import { queryPairs } from "../query/query-string.js";
import { parseProviderListQuery } from "../query/provider-filters.js";
import { POST_PROVIDER, PUT_PROVIDER } from "../schemas/resource-providers.js";
import {
  createProvider,
  deleteProvider,
  getProviderView,
  findProviders,
  getProviderByUuid,
  updateProvider,
  type ProviderView,
} from "../services/providers.js";

/** Placement's provider links: which relations exist depends on the microversion. */
function providerLinks(c: AppContext, uuid: string): Array<{ rel: string; href: string }> {
  const mv = c.get("microversion");
  const url = providerUrl(uuid);
  const rels = ["inventories", "usages"];
  if (mv.atLeast("1.1")) rels.push("aggregates");
  if (mv.atLeast("1.6")) rels.push("traits");
  if (mv.atLeast("1.11")) rels.push("allocations");
  return [{ rel: "self", href: url }, ...rels.map((rel) => ({ rel, href: `${url}/${rel}` }))];
}

export function serializeProvider(c: AppContext, p: ProviderView): Record<string, unknown> {
  const out: Record<string, unknown> = {
    uuid: p.uuid,
    name: p.name,
    generation: p.generation,
    links: providerLinks(c, p.uuid),
  };
  if (c.get("microversion").atLeast("1.14")) {
    out.parent_provider_uuid = p.parentProviderUuid;
    out.root_provider_uuid = p.rootProviderUuid;
  }
  return out;
}

/**
 * The parent as written: Placement looks it up by string equality, so a
 * parent named in upper case (or any other spelling than the stored one) does
 * not exist there, and must not here.
 */
function parentAsWritten(value: string | null | undefined): string | null {
  return value || null;
}

export function resourceProviderRoutes(deps: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const { db, store } = deps;

  declareRoute(app, "/resource_providers", {
    GET: async (c) => {
      authorize(c, "placement:resource_providers:list");
      const providers = await findProviders(db, parseProviderListQuery(queryPairs(c.req.url), c.get("microversion")));
      setLastModified(c, newestTimestamp(providers));
      return c.json({ resource_providers: providers.map((p) => serializeProvider(c, p)) });
    },

    POST: async (c) => {
      requireJsonContent(c);
      authorize(c, "placement:resource_providers:create");
      const mv = c.get("microversion");
      const body = await readJsonBody(c, POST_PROVIDER.at(mv));
      const uuid = body.uuid ? canonicalUuid(body.uuid) : randomUUID();
      const provider = await createProvider(store, { uuid, name: body.name, parentProviderUuid: parentAsWritten("parent_provider_uuid" in body ? body.parent_provider_uuid : null) });
      c.header("location", absoluteUrl(c, providerUrl(provider.uuid)));
      if (mv.lessThan("1.20")) return c.body(null, 201);
      setLastModified(c, newestTimestamp([provider]));
      return c.json(serializeProvider(c, provider));
    },
  });

  declareRoute(app, "/resource_providers/:uuid", {
    GET: async (c) => {
      authorize(c, "placement:resource_providers:show");
      const provider = await getProviderView(db, c.req.param("uuid"));
      setLastModified(c, newestTimestamp([provider]));
      return c.json(serializeProvider(c, provider));
    },

    DELETE: async (c) => {
      authorize(c, "placement:resource_providers:delete");
      await deleteProvider(store, c.req.param("uuid"));
      return c.body(null, 204);
    },
    PUT: async (c) => {
      // A missing or wrong content type is a 415 even for an unknown provider
      // or a caller the policy refuses (Placement's require_content decorator
      // runs before the handler checks policy or looks anything up).
      requireJsonContent(c);
      authorize(c, "placement:resource_providers:update");
      const uuid = c.req.param("uuid");
      const mv = c.get("microversion");
      // Placement looks the provider up before it reads the body: 404 wins over 400.
      const before = await getProviderByUuid(db, uuid);
      const body = await readJsonBody(c, PUT_PROVIDER.at(mv));
      const parent = "parent_provider_uuid" in body ? { parentProviderUuid: parentAsWritten(body.parent_provider_uuid) } : {};
      const update = { name: body.name, ...parent };
      const provider = await updateProvider(store, uuid, update, mv.atLeast("1.37"));
      // Placement sends the updated_at of the provider as it loaded it before
      // the update: none for a provider that was never updated.
      setLastModified(c, before.updatedAt);
      return c.json(serializeProvider(c, provider));
    },

  });

  return app;
}
