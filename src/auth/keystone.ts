/**
 * Keystone token validation, what keystonemiddleware's auth_token does for
 * Placement: the service authenticates itself with its own credentials, then
 * asks Keystone about each caller's token (GET /v3/auth/tokens with
 * X-Subject-Token). Verdicts are cached for a short time so Keystone does
 * not see one request per API call; a valid token is never cached past its
 * expiry.
 *
 * X-Service-Token, as keystonemiddleware handles it: a service calling on a
 * user's behalf (Nova for a long-running migration) sends its own token
 * beside the user's. The service token must be valid, or the request is
 * refused; when it carries one of the service roles, the user's token is
 * accepted even past its expiry (Keystone's allow_expired window). Without
 * those roles it is refused when service_token_roles_required is set, and
 * otherwise believed, with a warning, but gives no such leeway.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import type { Identity } from "./identity.js";

export interface KeystoneOptions {
  /** Identity endpoint, e.g. https://keystone.example.com:5000 (with or without /v3). */
  url: string;
  username: string;
  password: string;
  projectName: string;
  userDomainName: string;
  projectDomainName: string;
  cacheSeconds: number;
  timeoutMs: number;
  /** Largest number of cached tokens; the oldest go first. */
  maxCachedTokens?: number;
  /** Roles that make an X-Service-Token a service's (keystonemiddleware's service_token_roles). */
  serviceTokenRoles?: string[];
  /** Refuse a service token without those roles (keystonemiddleware's service_token_roles_required). */
  serviceTokenRolesRequired?: boolean;
  /** Told once when a service token without a service role is believed. */
  onWarning?: (message: string) => void;
}

/** The caller's token is missing, malformed, unknown, expired or revoked. */
export class InvalidToken extends Error {}
/** Keystone could not be asked (down, slow, or refusing our own credentials). */
export class IdentityServiceUnavailable extends Error {}

/** Tokens are printable ASCII (Fernet and JWS are base64url); anything else is not worth a round trip. */
const TOKEN_SHAPE = /^[\x21-\x7e]{1,8192}$/;

const tokenBody = z.object({
  token: z.object({
    expires_at: z.string(),
    user: z.object({ id: z.string() }),
    project: z.object({ id: z.string() }).optional(),
    domain: z.object({ id: z.string() }).optional(),
    system: z.object({ all: z.boolean().optional() }).optional(),
    roles: z.array(z.object({ name: z.string() })).default([]),
  }),
});

/** A verdict on a token: its identity, or undefined for a token Keystone rejected (it cannot become valid later). */
interface CachedVerdict {
  identity: Identity | undefined;
  until: number;
}

export class KeystoneValidator {
  private readonly base: string;
  private readonly cache = new Map<string, CachedVerdict>();
  private serviceToken: Promise<{ token: string; until: number }> | undefined;
  private warnedAboutServiceRoles = false;

  constructor(
    private readonly options: KeystoneOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.base = options.url.replace(/\/+$/, "").replace(/\/v3$/, "");
  }

  /**
   * Resolves the caller's identity from its token (and the X-Service-Token
   * of a service acting for it, if sent), or throws InvalidToken /
   * IdentityServiceUnavailable.
   */
  async validate(token: string, serviceToken?: string): Promise<Identity> {
    let allowExpired = false;
    if (serviceToken !== undefined) {
      const service = await this.lookup(serviceToken, false);
      const roles = this.options.serviceTokenRoles ?? ["service"];
      const isService = service.roles.some((r) => roles.includes(r));
      if (!isService && this.options.serviceTokenRolesRequired) throw new InvalidToken("service token without a service role");
      if (!isService && !this.warnedAboutServiceRoles) {
        this.warnedAboutServiceRoles = true;
        this.options.onWarning?.(
          `a valid token without any of the roles ${roles.join(", ")} was sent as X-Service-Token and believed; ` +
            "set service_token_roles_required (PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES_REQUIRED) to refuse such tokens",
        );
      }
      allowExpired = isService;
    }
    return this.lookup(token, allowExpired);
  }

  /** One token's identity, from the cache or Keystone; `allowExpired` accepts it past its expiry. */
  private async lookup(token: string, allowExpired: boolean): Promise<Identity> {
    if (!TOKEN_SHAPE.test(token)) throw new InvalidToken("malformed token");
    // Cache by digest so a heap dump does not hand out live tokens. A verdict
    // given with the expiry waived is kept apart from the plain one.
    const key = (allowExpired ? "x" : "") + createHash("sha256").update(token).digest("base64");
    const cached = this.cache.get(key);
    if (cached && cached.until > this.now()) {
      if (!cached.identity) throw new InvalidToken("token rejected earlier");
      return cached.identity;
    }
    if (cached) this.cache.delete(key);

    const cacheUntil = this.now() + this.options.cacheSeconds * 1000;
    let answer: { identity: Identity; expiresAt: number };
    try {
      answer = await this.ask(token, allowExpired);
    } catch (err) {
      // Remembering rejections keeps a flood of made-up tokens from becoming a flood on Keystone.
      if (err instanceof InvalidToken) this.remember(key, { identity: undefined, until: cacheUntil });
      throw err;
    }
    // With the expiry waived the token is believed for the cache time like any other.
    this.remember(key, { identity: answer.identity, until: allowExpired ? cacheUntil : Math.min(cacheUntil, answer.expiresAt) });
    return answer.identity;
  }

  private remember(key: string, verdict: CachedVerdict): void {
    if (verdict.until <= this.now()) return;
    if (this.cache.size >= (this.options.maxCachedTokens ?? 10_000)) {
      this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, verdict);
  }

  private async ask(token: string, allowExpired: boolean, retried = false): Promise<{ identity: Identity; expiresAt: number }> {
    const service = await this.getServiceToken();
    const res = await this.fetch(`${this.base}/v3/auth/tokens?nocatalog${allowExpired ? "&allow_expired=1" : ""}`, {
      method: "GET",
      headers: { "x-auth-token": service.token, "x-subject-token": token, accept: "application/json" },
    });
    if (res.status === 404) throw new InvalidToken("token not found or expired");
    if (res.status === 401 && !retried) {
      // Our own token expired or was revoked early: get a new one, once.
      this.serviceToken = undefined;
      return this.ask(token, allowExpired, true);
    }
    if (res.status !== 200) throw new IdentityServiceUnavailable(`identity service answered ${res.status} to token validation`);
    const parsed = tokenBody.safeParse(await readJson(res));
    if (!parsed.success) throw new IdentityServiceUnavailable("identity service sent an unreadable token");
    const t = parsed.data.token;
    const expiresAt = Date.parse(t.expires_at);
    if (!Number.isFinite(expiresAt) || (expiresAt <= this.now() && !allowExpired)) throw new InvalidToken("token expired");
    return {
      expiresAt,
      identity: {
        userId: t.user.id,
        projectId: t.project?.id ?? null,
        roles: t.roles.map((r) => r.name),
        systemScope: t.system?.all ? "all" : null,
        domainId: t.domain?.id ?? null,
      },
    };
  }

  /** The service's own token, shared by concurrent requests and renewed a minute before it expires. */
  private getServiceToken(): Promise<{ token: string; until: number }> {
    const current = this.serviceToken;
    if (current) {
      return current.then((s) => {
        if (s.until > this.now()) return s;
        if (this.serviceToken === current) this.serviceToken = undefined;
        return this.getServiceToken();
      });
    }
    const fresh = this.issueServiceToken();
    this.serviceToken = fresh;
    // A failed attempt must not be remembered, or one Keystone hiccup would last forever.
    fresh.catch(() => {
      if (this.serviceToken === fresh) this.serviceToken = undefined;
    });
    return fresh;
  }

  private async issueServiceToken(): Promise<{ token: string; until: number }> {
    const o = this.options;
    const res = await this.fetch(`${this.base}/v3/auth/tokens?nocatalog`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({
        auth: {
          identity: {
            methods: ["password"],
            password: { user: { name: o.username, password: o.password, domain: { name: o.userDomainName } } },
          },
          scope: { project: { name: o.projectName, domain: { name: o.projectDomainName } } },
        },
      }),
    });
    const token = res.headers.get("x-subject-token");
    if (res.status !== 201 || !token) {
      throw new IdentityServiceUnavailable(`identity service refused the service credentials (${res.status})`);
    }
    const body = (await readJson(res)) as { token?: { expires_at?: string } } | undefined;
    const expiresAt = Date.parse(body?.token?.expires_at ?? "");
    // Renewed a minute before it expires, or halfway through a shorter life.
    const until = Number.isFinite(expiresAt) ? expiresAt - Math.min(60_000, (expiresAt - this.now()) / 2) : this.now() + 5 * 60_000;
    return { token, until };
  }

  private async fetch(url: string, init: RequestInit): Promise<Response> {
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    for (let attempt = 0; ; attempt++) {
      try {
        return await fetch(url, { ...init, redirect: "error", signal });
      } catch (err) {
        // A kept-alive connection the server closed meanwhile (uwsgi's http-socket closes every one)
        // fails the request before Keystone saw it: one more try on a new connection.
        if (attempt === 0 && !signal.aborted) continue;
        throw new IdentityServiceUnavailable(`identity service unreachable: ${(err as Error).message}`);
      }
    }
  }
}

async function readJson(res: Response): Promise<unknown> {
  try {
    return await res.json();
  } catch {
    return undefined;
  }
}
