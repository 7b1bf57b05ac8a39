/**
 * `placement config show`: every setting's effective value and where it came
 * from, secrets masked, so an operator can check what a placement.conf and
 * the environment add up to before starting the server.
 */
import type { ConfigNote } from "./config-file.js";
import type { ConfigKey, LoadedConfig } from "./config.js";

const SECRETS = new Set<ConfigKey>(["PLACEMENT_KEYSTONE_PASSWORD"]);
/** Settings that are URLs which may carry a password. */
const URLS = new Set<ConfigKey>(["DATABASE_URL", "PLACEMENT_READ_DATABASE_URL", "PLACEMENT_KEYSTONE_URL", "PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI"]);

export interface ShownConfig {
  file: string | null;
  /** Values as text ("(unset)" when unset), secrets as "****". */
  settings: Record<string, { value: string; source: string }>;
  notes: ConfigNote[];
}

export function showConfig(loaded: LoadedConfig): ShownConfig {
  const keys = Object.keys(loaded.sources) as ConfigKey[];
  return {
    file: loaded.file ?? null,
    settings: Object.fromEntries(keys.map((k) => [k, { value: shown(k, loaded.config[k]), source: loaded.sources[k] }])),
    notes: loaded.notes,
  };
}

export function describeConfig(shownConfig: ShownConfig): string {
  const entries = Object.entries(shownConfig.settings);
  const width = Math.max(...entries.map(([k]) => k.length));
  const lines = [`# configuration file: ${shownConfig.file ?? "none"}`];
  for (const [key, { value, source }] of entries) lines.push(`${key.padEnd(width)} = ${value}  # ${source}`);
  for (const note of shownConfig.notes) lines.push(`# ${note.level}: ${note.message}`);
  return `${lines.join("\n")}\n`;
}

function shown(key: ConfigKey, value: unknown): string {
  if (value === undefined) return "(unset)";
  if (SECRETS.has(key)) return "****";
  if (Array.isArray(value)) return value.map((v) => (URLS.has(key) ? maskUrlPassword(String(v)) : v)).join(",");
  if (URLS.has(key) && typeof value === "string") return maskUrlPassword(value);
  return String(value);
}

/** postgresql://user:secret@host/db -> postgresql://user:****@host/db */
export function maskUrlPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)([^@]*)@/i, "$1****@");
}
