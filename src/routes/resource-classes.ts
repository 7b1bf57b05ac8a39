/**
 * /resource_classes (from 1.2): list, show, create (POST), rename (PUT up to
 * 1.6), create-if-missing (bodiless PUT from 1.7) and delete.
 */
import { Hono } from "hono";
import { authorize } from "../auth/policy.js";
import { readJsonBody, requireJsonContent } from "../http/body.js";
import type { AppContext, AppEnv, RouteDeps } from "../http/context.js";
import { newestTimestamp, setLastModified } from "../http/last-modified.js";
import { declareRoute, requireMicroversion } from "../http/routing.js";
import { validateBody } from "../http/validation.js";
import { POST_RESOURCE_CLASS, PUT_RESOURCE_CLASS, RESOURCE_CLASS_PATH } from "../schemas/resource-classes.js";
import {
  createResourceClass,
  deleteResourceClass,
  ensureResourceClass,
  getResourceClass,
  listResourceClasses,
  renameResourceClass,
} from "../services/resource-classes.js";

const classUrl = (name: string) => `/resource_classes/${name}`;

const serialize = (name: string) => ({ name, links: [{ rel: "self", href: classUrl(name) }] });

export function resourceClassRoutes({ db, store }: RouteDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  declareRoute(app, "/resource_classes", {
    GET: async (c) => {
      requireMicroversion(c, "1.2");
      authorize(c, "placement:resource_classes:list");
      const classes = await listResourceClasses(db);
      setLastModified(c, newestTimestamp(classes));
      return c.json({ resource_classes: classes.map((rc) => serialize(rc.name)) });
    },
    POST: async (c) => {
      requireMicroversion(c, "1.2");
      requireJsonContent(c);
      authorize(c, "placement:resource_classes:create");
      const { name } = await readJsonBody(c, POST_RESOURCE_CLASS.at(c.get("microversion")));
      const rc = await createResourceClass(store, name);
      return c.body(null, 201, { location: classUrl(rc.name) });
    },
  });

  declareRoute(app, "/resource_classes/:name", {
    GET: async (c) => {
      requireMicroversion(c, "1.2");
      authorize(c, "placement:resource_classes:show");
      const rc = await getResourceClass(db, c.req.param("name"));
      setLastModified(c, newestTimestamp([rc]));
      return c.json(serialize(rc.name));
    },
    PUT: async (c) => {
      requireMicroversion(c, "1.2");
      if (c.get("microversion").atLeast("1.7")) return ensureClass(c);
      requireJsonContent(c);
      authorize(c, "placement:resource_classes:update");
      const { name } = await readJsonBody(c, PUT_RESOURCE_CLASS.at(c.get("microversion")));
      const rc = await renameResourceClass(store, c.req.param("name"), name);
      return c.json(serialize(rc.name));
    },
    DELETE: async (c) => {
      requireMicroversion(c, "1.2");
      authorize(c, "placement:resource_classes:delete");
      await deleteResourceClass(store, c.req.param("name"));
      return c.body(null, 204);
    },
  });

  /** From 1.7 the PUT has no body: the name in the path is validated as the body's name was. */
  async function ensureClass(c: AppContext) {
    authorize(c, "placement:resource_classes:update");
    const { name } = validateBody(RESOURCE_CLASS_PATH.at(c.get("microversion")), { name: c.req.param("name") });
    const { created } = await ensureResourceClass(store, name);
    return c.body(null, created ? 201 : 204, { location: classUrl(name) });
  }

  return app;
}
