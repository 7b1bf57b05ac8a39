/**
 * `placement config show`: every setting's effective value and where it came
 * from, secrets masked, so an operator can check what a placement.conf and
 * the environment add up to before starting the server.
 */
import type { ConfigKey, LoadedConfig } from "./config.js";

const SECRETS = new Set<ConfigKey>(["PLACEMENT_KEYSTONE_PASSWORD"]);
/** Settings that are URLs which may carry a password. */
const URLS = new Set<ConfigKey>(["DATABASE_URL", "PLACEMENT_KEYSTONE_URL", "PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI"]);

export function describeConfig(loaded: LoadedConfig): string {
  const keys = Object.keys(loaded.sources) as ConfigKey[];
  const width = Math.max(...keys.map((k) => k.length));
  const lines = [`# configuration file: ${loaded.file ?? "none"}`];
  for (const key of keys) {
    lines.push(`${key.padEnd(width)} = ${shown(key, loaded.config[key])}  # ${loaded.sources[key]}`);
  }
  for (const note of loaded.notes) lines.push(`# ${note.level}: ${note.message}`);
  return `${lines.join("\n")}\n`;
}

function shown(key: ConfigKey, value: unknown): string {
  if (value === undefined) return "(unset)";
  if (SECRETS.has(key)) return "****";
  if (Array.isArray(value)) return value.join(",");
  if (URLS.has(key) && typeof value === "string") return maskUrlPassword(value);
  return String(value);
}

/** postgresql://user:secret@host/db -> postgresql://user:****@host/db */
export function maskUrlPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)([^@]*)@/i, "$1****@");
}
