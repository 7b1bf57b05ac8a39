/**
 * Who is calling. Every authentication strategy produces an Identity; policy
 * checks read nothing else. (Strategies: see authenticate.ts.)
 */
export interface Identity {
  userId: string | null;
  projectId: string | null;
  roles: string[];
  /** "all" for a system-scoped token, null for a project-scoped one. */
  systemScope: string | null;
}

/** Placement's noauth2: token `admin` is an admin; `user[:project]` otherwise; headers may override roles and project. */
export function noauthIdentity(token: string, headers: { roles?: string; projectId?: string; systemScope?: string }): Identity {
  const [user, project] = token.split(":", 2);
  const identity: Identity = {
    userId: user,
    projectId: project || user,
    roles: token === "admin" ? ["admin"] : [],
    systemScope: null,
  };
  if (headers.roles !== undefined) {
    identity.roles = headers.roles
      .split(",")
      .map((r) => r.trim().toLowerCase())
      .filter((r) => r.length > 0);
  }
  if (headers.projectId) identity.projectId = headers.projectId;
  if (headers.systemScope?.toLowerCase() === "all") {
    identity.systemScope = "all";
    identity.projectId = null;
  }
  return identity;
}
