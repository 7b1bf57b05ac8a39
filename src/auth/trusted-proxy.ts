/**
 * Identity headers set by a proxy in front of Placement (keystonemiddleware,
 * an API gateway). Anyone can send these headers, so they are believed only
 * on connections from the configured proxy addresses; from anywhere else the
 * request counts as unauthenticated.
 */
import { BlockList, isIP } from "node:net";
import type { Identity } from "./identity.js";
import { parseRoles } from "./identity.js";

export class TrustedProxies {
  private readonly list = new BlockList();

  /** `entries`: addresses or CIDR ranges, IPv4 or IPv6. Throws on anything else. */
  constructor(entries: string[]) {
    for (const entry of entries) {
      const [address, prefix, ...rest] = entry.split("/");
      const family = isIP(address);
      if (family === 0 || rest.length > 0) throw new Error(`not an IP address or CIDR range: ${entry}`);
      const type = family === 4 ? "ipv4" : "ipv6";
      if (prefix === undefined) {
        this.list.addAddress(address, type);
        continue;
      }
      const bits = Number(prefix);
      if (!/^\d+$/.test(prefix) || bits > (family === 4 ? 32 : 128)) throw new Error(`bad prefix length in ${entry}`);
      this.list.addSubnet(address, bits, type);
    }
  }

  /** True when the peer address is one of the proxies. An unknown peer (no socket) is not trusted. */
  trusts(remoteAddress: string | undefined): boolean {
    if (!remoteAddress) return false;
    // Dual-stack sockets report IPv4 peers as ::ffff:a.b.c.d.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remoteAddress);
    const address = mapped ? mapped[1] : remoteAddress;
    const family = isIP(address);
    if (family === 0) return false;
    return this.list.check(address, family === 4 ? "ipv4" : "ipv6");
  }
}

/**
 * The identity keystonemiddleware forwards: X-User-Id (required),
 * X-Project-Id, X-Roles, OpenStack-System-Scope, X-Domain-Id. A proxy that
 * says X-Identity-Status: Invalid means the token was rejected. Returns
 * undefined when the headers do not establish a caller.
 */
export function proxiedIdentity(header: (name: string) => string | undefined): Identity | undefined {
  const status = header("x-identity-status");
  if (status !== undefined && status.trim().toLowerCase() !== "confirmed") return undefined;
  const userId = header("x-user-id")?.trim();
  if (!userId) return undefined;
  const systemScope = header("openstack-system-scope")?.trim().toLowerCase() || null;
  return {
    userId,
    projectId: systemScope ? null : header("x-project-id")?.trim() || null,
    roles: parseRoles(header("x-roles") ?? ""),
    systemScope,
    domainId: header("x-domain-id")?.trim() || null,
  };
}
