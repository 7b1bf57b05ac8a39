/**
 * Traits (from 1.6): /traits, /traits/{name}, and a provider's traits at
 * /resource_providers/{uuid}/traits.
 */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import type { AppEnv, RouteDeps } from "../http/context.js";
import { badRequest } from "../http/errors.js";
import { newestTimestamp, setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { queryPairs, validateQuery } from "../query/query-string.js";
import { INVALID_TRAIT, LIST_TRAITS_QUERY, PUT_PROVIDER_TRAITS, TRAIT_PATH } from "../schemas/traits.js";
import {
  deleteTrait,
  ensureTrait,
  getProviderTraits,
  getTrait,
  listTraits,
  setProviderTraits,
  type TraitFilters,
  type TraitRow,
} from "../services/traits.js";

const traitUrl = (name: string) => `/traits/${name}`;

/** `name=in:A,B` or `name=startswith:PREFIX`; any other operator filters nothing, as in Placement. */
function nameFilter(value: string): TraitFilters {
  const colon = value.indexOf(":");
  if (colon < 0) {
    throw badRequest(
      `Badly formatted name parameter. Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "${value}"`,
    );
  }
  const op = value.slice(0, colon);
  const operand = value.slice(colon + 1);
  if (op === "in") return { nameIn: operand.split(",") };
  if (op === "startswith") return { prefix: operand };
  return {};
}

function associatedFilter(value: string): boolean {
  const v = value.toLowerCase();
  if (v !== "true" && v !== "false") throw badRequest('The query parameter "associated" only accepts "true" or "false"');
  return v === "true";
}

const traitNames = (rows: TraitRow[]) => rows.map((t) => t.name);

export function traitRoutes({ db, store }: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  declareRoute(app, "/traits", {
    GET: async (c) => {
      requireMicroversion(c, "1.6");
      authorize(c, "placement:traits:list");
      const query = validateQuery(LIST_TRAITS_QUERY.at(c.get("microversion")), queryPairs(c.req.url));
      const filters: TraitFilters = query.name !== undefined ? nameFilter(query.name) : {};
      if (query.associated !== undefined) filters.associated = associatedFilter(query.associated);
      const rows = await listTraits(db, filters);
      setLastModified(c, newestTimestamp(rows));
      return c.json({ traits: traitNames(rows) });
    },
  });

  declareRoute(app, "/traits/:name", {
    GET: async (c) => {
      requireMicroversion(c, "1.6");
      authorize(c, "placement:traits:show");
      const trait = await getTrait(db, c.req.param("name"));
      setLastModified(c, trait.createdAt);
      return c.body(null, 204);
    },
    PUT: async (c) => {
      requireMicroversion(c, "1.6");
      authorize(c, "placement:traits:update");
      const name = c.req.param("name");
      if (!TRAIT_PATH.at(c.get("microversion")).safeParse({ name }).success) throw badRequest(INVALID_TRAIT);
      const { trait, created } = await ensureTrait(store, name);
      setLastModified(c, trait.createdAt);
      return c.body(null, created ? 201 : 204, { location: traitUrl(name) });
    },
    DELETE: async (c) => {
      requireMicroversion(c, "1.6");
      authorize(c, "placement:traits:delete");
      await deleteTrait(store, c.req.param("name"));
      return c.body(null, 204);
    },
  }, { getAcceptsAnything: true });

  declareRoute(app, "/resource_providers/:uuid/traits", {
    GET: async (c) => {
      requireMicroversion(c, "1.6");
      authorize(c, "placement:resource_providers:traits:list");
      // Placement's handler catches the lookup's NotFound and names the provider twice.
      const { provider, traits: rows } = await getProviderTraits(db, c.req.param("uuid"));
      setLastModified(c, newestTimestamp(rows));
      return c.json({ traits: traitNames(rows), resource_provider_generation: provider.generation });
    },
    PUT: async (c) => {
      requireMicroversion(c, "1.6");
      requireJsonContent(c);
      authorize(c, "placement:resource_providers:traits:update");
      const body = await readJsonBody(c, PUT_PROVIDER_TRAITS.at(c.get("microversion")));
      const result = await setProviderTraits(store, c.req.param("uuid"), body.traits, body.resource_provider_generation);
      setLastModified(c, newestTimestamp(result.traits));
      return c.json({ traits: traitNames(result.traits), resource_provider_generation: result.generation });
    },
    DELETE: async (c) => {
      requireMicroversion(c, "1.6");
      authorize(c, "placement:resource_providers:traits:delete");
      await setProviderTraits(store, c.req.param("uuid"), []);
      return c.body(null, 204);
    },
  });

  return app;
}
