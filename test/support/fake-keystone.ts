/**
 * A small Keystone v3 identity server for tests, on loopback: it issues the
 * service's own token for the configured credentials (POST /v3/auth/tokens)
 * and validates subject tokens (GET /v3/auth/tokens), answering 404 for
 * unknown or expired tokens as Keystone does (unless asked with
 * allow_expired=1, as for a user token sent beside a service token).
 *
 *   const ks = await startFakeKeystone();
 *   ks.issue("tok-1", { userId: "u", projectId: "p", roles: ["admin"] });
 *   ... PLACEMENT_KEYSTONE_URL: ks.url ...
 *   await ks.close();
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeToken {
  userId: string;
  projectId?: string;
  domainId?: string;
  system?: boolean;
  roles: string[];
  /** Default: an hour from now. */
  expiresAt?: Date;
  /** Keystone answers 200 even though the token is past its expiry (as with allow_expired). */
  reportExpired?: boolean;
}

export interface FakeKeystone {
  url: string;
  credentials: { username: string; password: string; projectName: string };
  issue(token: string, details: FakeToken): void;
  revoke(token: string): void;
  /** Revokes the service's own tokens, as if they expired early. */
  revokeServiceTokens(): void;
  /** Every validation answers this status instead (simulates an outage); undefined to heal. */
  failValidationWith(status: number | undefined): void;
  validations: number;
  serviceLogins: number;
  close(): Promise<void>;
}

export async function startFakeKeystone(): Promise<FakeKeystone> {
  const credentials = { username: "placement", password: "s3cret", projectName: "service" };
  const tokens = new Map<string, FakeToken>();
  const serviceTokens = new Set<string>();
  let failure: number | undefined;

  const state = {
    validations: 0,
    serviceLogins: 0,
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== "/v3/auth/tokens") return send(res, 404, { error: { code: 404 } });
    if (req.method === "POST") {
      const body = JSON.parse(await readBody(req));
      const user = body?.auth?.identity?.password?.user;
      const project = body?.auth?.scope?.project;
      if (
        user?.name !== credentials.username ||
        user?.password !== credentials.password ||
        user?.domain?.name !== "Default" ||
        project?.name !== credentials.projectName
      ) {
        return send(res, 401, { error: { code: 401, message: "The request you have made requires authentication." } });
      }
      state.serviceLogins++;
      const token = `svc-${randomUUID()}`;
      serviceTokens.add(token);
      const expires = new Date(Date.now() + 3600_000).toISOString();
      return send(res, 201, { token: { expires_at: expires } }, { "x-subject-token": token });
    }
    if (req.method === "GET") {
      if (!serviceTokens.has(String(req.headers["x-auth-token"]))) return send(res, 401, { error: { code: 401 } });
      state.validations++;
      if (failure !== undefined) return send(res, failure, { error: { code: failure } });
      const subject = tokens.get(String(req.headers["x-subject-token"]));
      const expiresAt = subject?.expiresAt ?? new Date(Date.now() + 3600_000);
      // ?allow_expired=1 (a service acting for the user): Keystone still answers for an expired token.
      const allowExpired = /[?&]allow_expired=1\b/.test(req.url ?? "");
      if (!subject || (expiresAt.getTime() <= Date.now() && !subject.reportExpired && !allowExpired)) {
        return send(res, 404, { error: { code: 404, message: "Could not find token" } });
      }
      return send(res, 200, {
        token: {
          expires_at: expiresAt.toISOString(),
          user: { id: subject.userId, name: subject.userId, domain: { id: "default" } },
          ...(subject.projectId ? { project: { id: subject.projectId, name: subject.projectId, domain: { id: "default" } } } : {}),
          ...(subject.domainId ? { domain: { id: subject.domainId, name: subject.domainId } } : {}),
          ...(subject.system ? { system: { all: true } } : {}),
          roles: subject.roles.map((name) => ({ id: randomUUID(), name })),
        },
      });
    }
    send(res, 405, {});
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => send(res, 500, {}));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v3`,
    credentials,
    issue: (token, details) => tokens.set(token, details),
    revoke: (token) => tokens.delete(token),
    revokeServiceTokens: () => serviceTokens.clear(),
    failValidationWith: (status) => {
      failure = status;
    },
    get validations() {
      return state.validations;
    },
    get serviceLogins() {
      return state.serviceLogins;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}
