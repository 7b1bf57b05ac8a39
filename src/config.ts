/**
 * Runtime settings, from environment variables and the operator's
 * placement.conf (config-file.ts maps its options onto these names; the
 * environment wins), validated once at start-up. A bad value stops start-up
 * with one line naming the variable, or the file, section and option.
 */
import os from "node:os";
import { z } from "zod";
import { ConfigError } from "./config-error.js";
import { configFilePath, readConfigFile, type ConfigNote } from "./config-file.js";

export { ConfigError } from "./config-error.js";

const bool = z
  .enum(["true", "false", "1", "0", "yes", "no", "on", "off"])
  .transform((v) => ["true", "1", "yes", "on"].includes(v));

const list = z.string().transform((v) =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0),
);

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

export const configSchema = z.object({
  PORT: int(0, 65535).default(8778),
  HOST: z.string().min(1).default("127.0.0.1"),
  DATABASE_URL: z.string().url().optional(),
  /** Hot standbys for the reads that may be stale (src/db/read-replicas.ts): one URL, or several comma-separated (round-robin). */
  PLACEMENT_READ_DATABASE_URL: list.pipe(z.array(z.string().url())).optional(),
  /** A standby further behind the primary than this is skipped: its reads go to the primary. */
  PLACEMENT_READ_MAX_LAG_SECONDS: int(1, 3600).default(5),
  PLACEMENT_DATA_DIR: z.string().min(1).default("./.placement-data"),
  PLACEMENT_EMBEDDED_DB_PORT: int(1, 65535).default(5433),
  LOG_LEVEL: z.enum(["debug", "info", "warn", "error", "silent"]).default("info"),
  PLACEMENT_DB_POOL_SIZE: int(1, 1000).default(10),
  PLACEMENT_WORKERS: int(1, 256).default(() => os.availableParallelism()),
  PLACEMENT_AUTH_STRATEGY: z.enum(["noauth2", "keystone", "trusted-proxy"]).default("noauth2"),
  PLACEMENT_ALLOW_NOAUTH: bool.default(false),
  PLACEMENT_ENFORCE_NEW_DEFAULTS: bool.default(false),
  PLACEMENT_POLICY_FILE: z.string().min(1).optional(),
  /** Keystone strategy: the identity endpoint and the service's own credentials for validating tokens. */
  PLACEMENT_KEYSTONE_URL: z.string().url().optional(),
  PLACEMENT_KEYSTONE_USERNAME: z.string().min(1).optional(),
  PLACEMENT_KEYSTONE_PASSWORD: z.string().min(1).optional(),
  PLACEMENT_KEYSTONE_PROJECT_NAME: z.string().min(1).optional(),
  PLACEMENT_KEYSTONE_USER_DOMAIN_NAME: z.string().min(1).default("Default"),
  PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME: z.string().min(1).default("Default"),
  /** How long a validated token is believed without asking Keystone again (never past its expiry). */
  PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS: int(0, 3600).default(300),
  PLACEMENT_KEYSTONE_TIMEOUT_SECONDS: int(1, 300).default(10),
  /** Trusted-proxy strategy: addresses or CIDR ranges whose identity headers are believed. */
  PLACEMENT_TRUSTED_PROXIES: list.optional(),
  PLACEMENT_CORS_ALLOWED_ORIGINS: list.optional(),
  PLACEMENT_CORS_ALLOW_HEADERS: list.optional(),
  PLACEMENT_MAX_BODY_BYTES: int(1024, 1024 * 1024 * 1024).default(10 * 1024 * 1024),
  /** Project and user given to consumers written before microversion 1.8. */
  PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID: z.string().min(1).default("00000000-0000-0000-0000-000000000000"),
  PLACEMENT_INCOMPLETE_CONSUMER_USER_ID: z.string().min(1).default("00000000-0000-0000-0000-000000000000"),
  /** How often a write that hit a deadlock or serialization failure is retried before the client sees 409. */
  PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT: int(0, 100).default(10),
  PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: bool.default(false),
  PLACEMENT_MAX_ALLOCATION_CANDIDATES: int(-1, 1_000_000_000).default(-1),
  PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY: z.enum(["depth-first", "breadth-first"]).default("depth-first"),
  /**
   * Largest GET /allocation_candidates body, in bytes (0: no bound). An answer that would be larger is
   * refused with 400 before any of it is sent, and the answers a worker is writing at once hold twice this
   * at the most (past it, 503); an answer stops counting once it is whole (docs/memory.md).
   * The default keeps every answer of Nova's usual queries (limit=1000) and of unlimited queries over
   * ten thousand nested compute nodes, and fits a worker's 256 MB heap.
   */
  PLACEMENT_MAX_ANSWER_BYTES: int(0, 4 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  /** Keystone strategy: the identity endpoint named to clients in WWW-Authenticate (default PLACEMENT_KEYSTONE_URL). */
  PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI: z.string().url().optional(),
  /** Domains of the service's credentials by id (win over the _NAME settings, as in keystoneauth). */
  PLACEMENT_KEYSTONE_USER_DOMAIN_ID: z.string().min(1).optional(),
  PLACEMENT_KEYSTONE_PROJECT_DOMAIN_ID: z.string().min(1).optional(),
  /** A caller's X-Service-Token counts as a service's only with one of these roles (keystonemiddleware's service_token_roles). */
  PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES: list.default(["service"]),
  /** A service token without those roles is refused (true) or believed with a warning (false, keystonemiddleware's default). */
  PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES_REQUIRED: bool.default(false),
  /** Bounded waits (milliseconds; 0: no bound). A slow client must send its headers, then its whole request, within these. */
  PLACEMENT_HEADERS_TIMEOUT_MS: int(0, 3_600_000).default(20_000),
  PLACEMENT_REQUEST_TIMEOUT_MS: int(0, 3_600_000).default(60_000),
  /** How long an idle keep-alive connection stays open; above a load balancer's idle timeout. */
  PLACEMENT_KEEP_ALIVE_TIMEOUT_MS: int(0, 3_600_000).default(65_000),
  /** A request whose handler has not answered by then gets 503 (the database work under it is bounded below). */
  PLACEMENT_HANDLER_TIMEOUT_MS: int(0, 3_600_000).default(60_000),
  PLACEMENT_DB_ACQUIRE_TIMEOUT_MS: int(0, 3_600_000).default(5_000),
  PLACEMENT_DB_STATEMENT_TIMEOUT_MS: int(0, 3_600_000).default(30_000),
  PLACEMENT_DB_LOCK_TIMEOUT_MS: int(0, 3_600_000).default(10_000),
  PLACEMENT_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: int(0, 3_600_000).default(60_000),
  /**
   * transaction: DATABASE_URL is a pooler in transaction mode (PgBouncer's pool_mode = transaction), which
   * hands each transaction any server connection: no named prepared statements, no session settings, no
   * LISTEN (the change feed polls). none: a direct connection, or a session-mode pooler.
   */
  PLACEMENT_DB_POOLER: z.enum(["none", "transaction"]).default("none"),
  /** json: one JSON object per line; text: plain lines, the request log in upstream Placement's format. */
  LOG_FORMAT: z.enum(["json", "text"]).default("json"),
  /** A listener for GET /metrics only, without authentication (for Prometheus on a private network). */
  PLACEMENT_METRICS_PORT: int(1, 65535).optional(),
  /** Its address; default HOST. */
  PLACEMENT_METRICS_HOST: z.string().min(1).optional(),
  /** Also answer GET /metrics on the API port (authenticated; admin or service). */
  PLACEMENT_METRICS_ON_API_PORT: bool.default(false),
});

export type Config = z.infer<typeof configSchema>;

export type ConfigKey = keyof Config;

export interface LoadedConfig {
  config: Config;
  /** Per setting: "default", "environment NAME" or "FILE [section] option". */
  sources: Record<ConfigKey, string>;
  /** The configuration file read, if any. */
  file?: string;
  /** What the file said that has no effect here, or that nobody knows. */
  notes: ConfigNote[];
}

/**
 * Settings from an environment and the configuration file (--config-file,
 * PLACEMENT_CONFIG_FILE, or /etc/placement/placement.conf when it exists);
 * throws ConfigError with a one-line message.
 */
export function loadSettings(env: NodeJS.ProcessEnv = process.env, configFile?: string): LoadedConfig {
  const inEnv = (k: string) => env[k] !== undefined && env[k] !== "";
  const file = configFilePath(env, configFile);
  const fromFile = file ? readConfigFile(file, inEnv) : undefined;
  const raw: Record<string, string> = {};
  const sources = {} as Record<ConfigKey, string>;
  for (const key of Object.keys(configSchema.shape) as ConfigKey[]) {
    const setting = fromFile?.settings[key];
    if (inEnv(key)) {
      raw[key] = env[key]!;
      sources[key] = `environment ${key}`;
    } else if (setting) {
      raw[key] = setting.value;
      sources[key] = setting.where;
    } else sources[key] = "default";
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = String(issue.path[0]) as ConfigKey;
    const where = sources[key];
    throw new ConfigError(
      where.startsWith("environment") || where === "default"
        ? `invalid setting ${key}: ${issue.message}`
        : `invalid value in ${where}: ${issue.message}`,
    );
  }
  return { config: parsed.data, sources, file, notes: fromFile?.notes ?? [] };
}

/** Parses settings from an environment (and the configuration file it names); throws ConfigError. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, configFile?: string): Config {
  return loadSettings(env, configFile).config;
}

/** A config for tests and tools: defaults plus overrides. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...configSchema.parse({}), ...overrides };
}
