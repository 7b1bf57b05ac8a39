/**
 * Authentication: turns request headers into an Identity, per
 * PLACEMENT_AUTH_STRATEGY. This is the single place identity is established;
 * authorization (policy.ts) reads only the Identity it leaves in the context.
 */
import type { Config } from "../config.js";
import type { AppContext } from "../http/context.js";
import { PlacementError } from "../http/errors.js";
import { noauthIdentity } from "./identity.js";

export async function authenticate(c: AppContext, config: Config): Promise<void> {
  switch (config.PLACEMENT_AUTH_STRATEGY) {
    case "noauth2": {
      const token = c.req.header("x-auth-token");
      if (!token) throw unauthorized();
      c.set(
        "identity",
        noauthIdentity(token, {
          roles: c.req.header("x-roles"),
          projectId: c.req.header("x-project-id"),
          systemScope: c.req.header("openstack-system-scope"),
        }),
      );
      return;
    }
    default:
      throw new PlacementError(500, `authentication strategy ${config.PLACEMENT_AUTH_STRATEGY} is not available`);
  }
}

function unauthorized(): PlacementError {
  return new PlacementError(401, "The request you have made requires authentication.", undefined, {
    "www-authenticate": 'Keystone uri="unset"',
  });
}
