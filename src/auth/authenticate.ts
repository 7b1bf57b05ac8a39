/**
 * Authentication: turns a request into an Identity, per
 * PLACEMENT_AUTH_STRATEGY. This is the single place identity is established;
 * authorization (policy.ts) reads only the Identity it leaves in the context.
 *
 *   noauth2        development and tests only: the token names the caller.
 *   keystone       X-Auth-Token validated against Keystone (keystone.ts).
 *   trusted-proxy  identity headers from a proxy at a configured address (trusted-proxy.ts).
 */
import { ConfigError, type Config } from "../config.js";
import type { AppContext } from "../http/context.js";
import { PlacementError, WebobDefaultError } from "../http/errors.js";
import type { Logger } from "../log.js";
import { noauthIdentity, type Identity } from "./identity.js";
import { IdentityServiceUnavailable, InvalidToken, KeystoneValidator } from "./keystone.js";
import { proxiedIdentity, TrustedProxies } from "./trusted-proxy.js";
import { peerAddress } from "../http/node-bindings.js";

export type Authenticator = (c: AppContext) => Promise<Identity>;

/** Builds the configured strategy once per app (logging to the app's logger); throws ConfigError when its settings are incomplete. */
export function createAuthenticator(config: Config, log: Logger): Authenticator {
  switch (config.PLACEMENT_AUTH_STRATEGY) {
    case "noauth2":
      return noauth2;
    case "keystone":
      return keystone(config, log);
    case "trusted-proxy":
      return trustedProxy(config);
  }
}

async function noauth2(c: AppContext): Promise<Identity> {
  const token = c.req.header("x-auth-token");
  // Placement's NoAuthMiddleware returns a bare webob 401: webob's body, no challenge header.
  if (!token) throw new WebobDefaultError(401, "");
  return noauthIdentity(token, {
    roles: c.req.header("x-roles"),
    projectId: c.req.header("x-project-id"),
    systemScope: c.req.header("openstack-system-scope"),
  });
}

function keystone(config: Config, log: Logger): Authenticator {
  const missing = (
    ["PLACEMENT_KEYSTONE_URL", "PLACEMENT_KEYSTONE_USERNAME", "PLACEMENT_KEYSTONE_PASSWORD", "PLACEMENT_KEYSTONE_PROJECT_NAME"] as const
  ).filter((k) => !config[k]);
  if (missing.length > 0) throw new ConfigError(`PLACEMENT_AUTH_STRATEGY=keystone needs ${missing.join(", ")}`);
  const validator = new KeystoneValidator({
    url: config.PLACEMENT_KEYSTONE_URL!,
    username: config.PLACEMENT_KEYSTONE_USERNAME!,
    password: config.PLACEMENT_KEYSTONE_PASSWORD!,
    projectName: config.PLACEMENT_KEYSTONE_PROJECT_NAME!,
    userDomainName: config.PLACEMENT_KEYSTONE_USER_DOMAIN_NAME,
    projectDomainName: config.PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME,
    cacheSeconds: config.PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS,
    timeoutMs: config.PLACEMENT_KEYSTONE_TIMEOUT_SECONDS * 1000,
    serviceTokenRoles: config.PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES,
    serviceTokenRolesRequired: config.PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES_REQUIRED,
    onWarning: (message) => log.warn(message),
  });
  const challenge = `Keystone uri="${config.PLACEMENT_KEYSTONE_URL}"`;
  return async (c) => {
    const token = c.req.header("x-auth-token");
    if (!token) throw unauthorized(challenge);
    try {
      return await validator.validate(token, c.req.header("x-service-token") || undefined);
    } catch (err) {
      if (err instanceof InvalidToken) throw unauthorized(challenge);
      if (err instanceof IdentityServiceUnavailable) {
        log.error("cannot validate token", { requestId: c.get("requestId"), reason: err.message });
        throw new PlacementError(503, "The identity service is temporarily unavailable; try again later.");
      }
      throw err;
    }
  };
}

function trustedProxy(config: Config): Authenticator {
  const addresses = config.PLACEMENT_TRUSTED_PROXIES ?? [];
  if (addresses.length === 0) throw new ConfigError("PLACEMENT_AUTH_STRATEGY=trusted-proxy needs PLACEMENT_TRUSTED_PROXIES");
  let proxies: TrustedProxies;
  try {
    proxies = new TrustedProxies(addresses);
  } catch (err) {
    throw new ConfigError(`invalid setting PLACEMENT_TRUSTED_PROXIES: ${(err as Error).message}`);
  }
  return async (c) => {
    const identity = proxies.trusts(peerAddress(c)) ? proxiedIdentity((name) => c.req.header(name)) : undefined;
    if (!identity) throw unauthorized('Keystone uri="unset"');
    return identity;
  };
}

function unauthorized(challenge: string): PlacementError {
  return new PlacementError(401, "The request you have made requires authentication.", undefined, {
    "www-authenticate": challenge,
  });
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|::1|\[::1\]|::ffff:127(\.\d{1,3}){3})$/i;

/**
 * Start-up checks for the strategy: noauth2 believes whatever the caller
 * says, so it may listen only on loopback unless the operator insists, and
 * it always says loudly that it is on.
 */
export function checkAuthStartup(config: Config, log: Logger): void {
  createAuthenticator(config, log);
  if (config.PLACEMENT_AUTH_STRATEGY !== "noauth2") return;
  if (!LOOPBACK.test(config.HOST) && !config.PLACEMENT_ALLOW_NOAUTH) {
    throw new ConfigError(
      `refusing to serve with PLACEMENT_AUTH_STRATEGY=noauth2 on ${config.HOST}: anyone who can reach it is admin. ` +
        "Listen on 127.0.0.1, choose keystone or trusted-proxy, or set PLACEMENT_ALLOW_NOAUTH=true for a test network.",
    );
  }
  log.warn(
    "AUTHENTICATION IS DISABLED (PLACEMENT_AUTH_STRATEGY=noauth2): any caller can claim any user, project and role. Never use this outside development and tests.",
    { host: config.HOST },
  );
}
