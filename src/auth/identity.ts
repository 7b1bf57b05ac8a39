/**
 * Who is calling. Every authentication strategy produces an Identity; policy
 * checks read nothing else. (Strategies: see authenticate.ts.)
 */
export interface Identity {
  userId: string | null;
  /** The project the token is scoped to; null for system- and domain-scoped tokens. */
  projectId: string | null;
  /** Role names as the identity service gave them (compared case-insensitively). */
  roles: string[];
  /** "all" for a system-scoped token, null otherwise. */
  systemScope: string | null;
  /** The domain of a domain-scoped token (Keystone), null otherwise. */
  domainId: string | null;
}

/** Splits a comma-separated role header the way oslo.context does. */
export function parseRoles(header: string): string[] {
  return header
    .split(",")
    .map((r) => r.trim())
    .filter((r) => r.length > 0);
}

/**
 * Placement's noauth2: the token is `user[:project]` (project defaults to the
 * user); user `admin` gets the admin role; X-Roles replaces the roles,
 * X-Project-Id wins over the token's project, and `OpenStack-System-Scope:
 * all` makes the token system scoped (no project from the token).
 */
export function noauthIdentity(token: string, headers: { roles?: string; projectId?: string; systemScope?: string }): Identity {
  const colon = token.indexOf(":");
  const user = colon < 0 ? token : token.slice(0, colon);
  const tokenProject = colon < 0 ? "" : token.slice(colon + 1);
  const systemScope = headers.systemScope ? headers.systemScope.trim().toLowerCase() : "";
  return {
    userId: user,
    projectId: headers.projectId || (systemScope ? null : tokenProject || user),
    roles: headers.roles !== undefined ? parseRoles(headers.roles) : user === "admin" ? ["admin"] : [],
    systemScope: systemScope || null,
    domainId: null,
  };
}
