/**
 * The operator's placement.conf (oslo.config INI, as Placement reads it)
 * mapped onto our settings: each option this server honours becomes the
 * value of one PLACEMENT_* setting (src/config.ts), so a file value and an
 * environment variable are the same thing and the environment wins.
 *
 * Options Placement knows that mean nothing here are accepted with a note
 * saying why; an option or section nobody knows is a warning naming it; a
 * value that cannot be used stops start-up naming the file, section and option.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { ConfigError } from "./config-error.js";
import { interpolate, IniError, parseIni, parseList, type IniSections } from "./config-ini.js";

/** Where Placement's own packaging puts the file; read when it exists and nothing else is named. */
export const DEFAULT_CONFIG_FILE = "/etc/placement/placement.conf";

type Kind = "str" | "bool" | "int" | "list";

interface Mapped {
  to: string;
  kind: Kind;
  /** Turns the file's value into the setting's; undefined leaves the setting alone. */
  convert?: (value: string, where: string) => string | undefined;
}
interface NoEffect {
  noEffect: string;
  kind?: Kind;
  level?: "info" | "warn";
}
type Rule = Mapped | NoEffect;

export interface FileSetting {
  value: string;
  /** `file [section] option`, for messages and `placement config show`. */
  where: string;
}

export interface ConfigNote {
  level: "info" | "warn";
  message: string;
}

export interface ConfigFileSettings {
  file: string;
  settings: Record<string, FileSetting>;
  notes: ConfigNote[];
}

const OSLO_DB = "oslo.db tuning: node-postgres keeps its own pool (max_pool_size is honoured)";
const LOGGING = "logging goes to stderr as JSON lines (LOG_LEVEL); [DEFAULT] debug is honoured";
const TLS = "not read here: give Node a CA bundle with NODE_EXTRA_CA_CERTS";
const MEMCACHE = "validated tokens are cached in each worker's memory (token_cache_time is honoured)";

const RULES: Record<string, Record<string, Rule>> = {
  DEFAULT: {
    debug: { to: "LOG_LEVEL", kind: "bool", convert: (v) => (v === "true" ? "debug" : undefined) },
    ...noEffect(LOGGING, [
      "log_dir", "log_file", "use_stderr", "use_syslog", "use_journal", "use_json", "log_config_append",
      "log_date_format", "syslog_log_facility", "default_log_levels", "logging_context_format_string",
      "logging_default_format_string", "logging_exception_prefix", "logging_user_identity_format",
      "logging_debug_format_suffix", "instance_format", "instance_uuid_format", "publish_errors",
      "fatal_deprecations", "watch_log_file", "log_rotation_type", "max_logfile_count", "max_logfile_size_mb",
      "log_rotate_interval", "log_rotate_interval_type", "rate_limit_burst", "rate_limit_interval",
      "rate_limit_except_level", "verbose",
    ]),
    ...noEffect("paths of the Python service; nothing here reads them", ["state_path", "pybasedir", "tempdir"]),
  },
  placement_database: {
    connection: { to: "DATABASE_URL", kind: "str", convert: databaseUrl },
    max_pool_size: { to: "PLACEMENT_DB_POOL_SIZE", kind: "int" },
    // Ours, not Placement's: oslo.db has no such option (see PLACEMENT_DB_POOLER).
    pooler: { to: "PLACEMENT_DB_POOLER", kind: "str" },
    // oslo.db's read replica: Placement itself never reads from it; here GET /allocation_candidates does.
    slave_connection: { to: "PLACEMENT_READ_DATABASE_URL", kind: "str", convert: databaseUrl },
    sync_on_startup: { noEffect: "this server always applies its migrations at start-up", kind: "bool" },
    ...noEffect(OSLO_DB, [
      "connection_parameters", "sqlite_synchronous", "mysql_sql_mode", "connection_recycle_time",
      "max_retries", "retry_interval", "max_overflow", "connection_debug", "connection_trace", "pool_timeout",
      "db_max_retries", "db_retry_interval", "db_inc_retry_interval", "db_max_retry_interval", "mysql_enable_ndb",
    ]),
  },
  api: {
    auth_strategy: { to: "PLACEMENT_AUTH_STRATEGY", kind: "str", convert: authStrategy },
  },
  keystone_authtoken: {
    auth_url: { to: "PLACEMENT_KEYSTONE_URL", kind: "str" },
    www_authenticate_uri: { to: "PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI", kind: "str" },
    auth_uri: { to: "PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI", kind: "str" },
    auth_type: { noEffect: "", kind: "str" }, // checked in readConfigFile: only the password plugin exists here
    username: { to: "PLACEMENT_KEYSTONE_USERNAME", kind: "str" },
    password: { to: "PLACEMENT_KEYSTONE_PASSWORD", kind: "str" },
    project_name: { to: "PLACEMENT_KEYSTONE_PROJECT_NAME", kind: "str" },
    user_domain_name: { to: "PLACEMENT_KEYSTONE_USER_DOMAIN_NAME", kind: "str" },
    project_domain_name: { to: "PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME", kind: "str" },
    user_domain_id: { to: "PLACEMENT_KEYSTONE_USER_DOMAIN_ID", kind: "str" },
    project_domain_id: { to: "PLACEMENT_KEYSTONE_PROJECT_DOMAIN_ID", kind: "str" },
    service_token_roles: { to: "PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES", kind: "list" },
    service_token_roles_required: { to: "PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES_REQUIRED", kind: "bool" },
    // keystonemiddleware: -1 turns the cache off.
    token_cache_time: { to: "PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS", kind: "int", convert: (v) => (v === "-1" ? "0" : v) },
    http_connect_timeout: { to: "PLACEMENT_KEYSTONE_TIMEOUT_SECONDS", kind: "int" },
    ...noEffect(TLS, ["cafile", "certfile", "keyfile", "insecure"], "warn"),
    ...noEffect(MEMCACHE, [
      "memcached_servers", "memcache_security_strategy", "memcache_secret_key", "memcache_pool_dead_retry",
      "memcache_pool_maxsize", "memcache_pool_socket_timeout", "memcache_pool_unused_timeout",
      "memcache_pool_conn_get_timeout", "memcache_use_advanced_pool", "memcache_tls_enabled", "cache",
    ]),
    ...noEffect("keystonemiddleware details this server does not need", [
      "service_type", "region_name", "interface", "auth_version", "delay_auth_decision", "http_request_max_retries",
      "include_service_catalog", "enforce_token_bind", "auth_section", "service_token_roles_required_warning",
      "status_code_retries", "status_code_retry_delay", "connect_retries", "connect_retry_delay", "timeout",
    ]),
  },
  placement: {
    randomize_allocation_candidates: { to: "PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES", kind: "bool" },
    max_allocation_candidates: { to: "PLACEMENT_MAX_ALLOCATION_CANDIDATES", kind: "int" },
    // Not an option of Placement's (which has no such bound): this server's own, in the section it belongs to.
    max_answer_bytes: { to: "PLACEMENT_MAX_ANSWER_BYTES", kind: "int" },
    allocation_candidates_generation_strategy: { to: "PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY", kind: "str" },
    allocation_conflict_retry_count: { to: "PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT", kind: "int" },
    incomplete_consumer_project_id: { to: "PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID", kind: "str" },
    incomplete_consumer_user_id: { to: "PLACEMENT_INCOMPLETE_CONSUMER_USER_ID", kind: "str" },
  },
  oslo_policy: {
    policy_file: { to: "PLACEMENT_POLICY_FILE", kind: "str" }, // resolved in readConfigFile
    enforce_new_defaults: { to: "PLACEMENT_ENFORCE_NEW_DEFAULTS", kind: "bool" },
    enforce_scope: { noEffect: "", kind: "bool" }, // checked in readConfigFile
    policy_default_rule: { noEffect: "every Placement rule has its own default", kind: "str" },
    policy_dirs: { noEffect: "only policy_file is read; merge policy.d files into it", kind: "list", level: "warn" },
  },
  cors: {
    allowed_origin: { to: "PLACEMENT_CORS_ALLOWED_ORIGINS", kind: "list" },
    allow_headers: { to: "PLACEMENT_CORS_ALLOW_HEADERS", kind: "list" },
    ...noEffect("the CORS answer follows Placement's defaults for these", [
      "allow_credentials", "expose_headers", "max_age", "allow_methods",
    ]),
  },
  workarounds: {
    optimize_for_wide_provider_trees: {
      noEffect:
        "upstream's switch to a faster candidates algorithm for trees with many alike children; this server's " +
        "engine works that way always, so there is nothing to switch",
      kind: "bool",
    },
  },
};

/** Whole sections Placement deployments carry that mean nothing here. */
const NO_EFFECT_SECTIONS: Record<string, string> = {
  oslo_concurrency: "no file locks are taken",
  oslo_middleware: "proxy headers are not parsed (put the proxy's address in PLACEMENT_TRUSTED_PROXIES for identity only)",
  profiler: "OSProfiler is not supported",
  oslo_messaging_notifications: "Placement sends no notifications",
  oslo_messaging_rabbit: "Placement sends no notifications",
  healthcheck: "GET /healthcheck is built in",
  os_brick: "not used by Placement",
  privsep: "not used by Placement",
  database: "Placement reads [placement_database]",
};

function noEffect(reason: string, names: string[], level: "info" | "warn" = "info"): Record<string, NoEffect> {
  return Object.fromEntries(names.map((n) => [n, { noEffect: reason, level }]));
}

/**
 * Which file to read: --config-file, then PLACEMENT_CONFIG_FILE, then
 * /etc/placement/placement.conf when it exists. A named file must exist.
 */
export function configFilePath(env: NodeJS.ProcessEnv, fromCommandLine?: string): string | undefined {
  const named = fromCommandLine || env.PLACEMENT_CONFIG_FILE || undefined;
  if (named) {
    if (!existsSync(named)) throw new ConfigError(`configuration file ${named} does not exist`);
    return named;
  }
  return existsSync(DEFAULT_CONFIG_FILE) ? DEFAULT_CONFIG_FILE : undefined;
}

/**
 * Reads the file into settings keyed by PLACEMENT_* names. `overridden`
 * says which settings the environment sets: their file values are neither
 * converted nor judged, as they will not be used.
 */
export function readConfigFile(file: string, overridden: (setting: string) => boolean = () => false): ConfigFileSettings {
  let sections: IniSections;
  try {
    sections = parseIni(readFileSync(file, "utf8"), file);
  } catch (err) {
    if (err instanceof IniError) throw new ConfigError(err.message);
    throw new ConfigError(`cannot read configuration file ${file}: ${(err as Error).message}`);
  }
  const settings: Record<string, FileSetting> = {};
  const notes: ConfigNote[] = [];
  for (const [section, options] of sections) {
    const rules = RULES[section];
    if (!rules) {
      const reason = NO_EFFECT_SECTIONS[section];
      notes.push(
        reason
          ? { level: "info", message: `${file}: section [${section}] has no effect here: ${reason}` }
          : { level: "warn", message: `${file}: unknown section [${section}] ignored` },
      );
      continue;
    }
    for (const [option, { value: rawValue }] of options) {
      const where = `${file} [${section}] ${option}`;
      const rule = rules[option];
      if (!rule) {
        notes.push({ level: "warn", message: `${where}: unknown option ignored` });
        continue;
      }
      if ("to" in rule && overridden(rule.to)) continue;
      let value: string;
      try {
        value = interpolate(rawValue, sections, where);
      } catch (err) {
        throw new ConfigError(`invalid value in ${(err as Error).message}`);
      }
      const typed = typedValue(value, rule.kind ?? "str", where);
      if (typed === undefined) continue;
      if ("noEffect" in rule) {
        const note = checkValue(section, option, typed, where);
        if (note === "fine") continue;
        if (note) notes.push(note);
        else if (rule.noEffect) notes.push({ level: rule.level ?? "info", message: `${where} has no effect here: ${rule.noEffect}` });
        continue;
      }
      const converted = rule.convert ? rule.convert(typed, where) : typed;
      if (converted !== undefined) settings[rule.to] = { value: converted, where };
    }
  }
  applyUpstreamDefaults(file, sections, settings, overridden);
  resolvePolicyFile(file, settings, notes);
  return { file, settings, notes };
}

/** A value of the option's oslo.config type, as the string our schema reads; undefined when empty. */
function typedValue(value: string, kind: Kind, where: string): string | undefined {
  if (value === "") return undefined;
  switch (kind) {
    case "bool": {
      const v = value.toLowerCase();
      if (["true", "1", "yes", "on"].includes(v)) return "true";
      if (["false", "0", "no", "off"].includes(v)) return "false";
      throw new ConfigError(`invalid value in ${where}: "${value}" is not a boolean (true or false)`);
    }
    case "int":
      if (!/^[+-]?\d+$/.test(value.trim())) throw new ConfigError(`invalid value in ${where}: "${value}" is not an integer`);
      return String(Number(value.trim()));
    case "list":
      return parseList(value).join(",");
    case "str":
      return value;
  }
}

/** Options whose meaning depends on their value: "fine" needs no note. */
function checkValue(section: string, option: string, value: string, where: string): ConfigNote | "fine" | undefined {
  if (section === "keystone_authtoken" && option === "auth_type") {
    if (value !== "password" && value !== "v3password") {
      throw new ConfigError(`invalid value in ${where}: "${value}" is not supported; this server authenticates with auth_type = password`);
    }
    return "fine";
  }
  if (section === "oslo_policy" && option === "enforce_scope") {
    if (value === "true") return "fine";
    return {
      level: "warn",
      message: `${where} = False has no effect here: every Placement rule is project scoped and scope is always checked`,
    };
  }
  return undefined;
}

/** Placement's defaults where they differ from ours: with its file in use, behave as Placement would. */
function applyUpstreamDefaults(
  file: string,
  sections: IniSections,
  settings: Record<string, FileSetting>,
  overridden: (setting: string) => boolean,
): void {
  if (!sections.get("api")?.has("auth_strategy") && !overridden("PLACEMENT_AUTH_STRATEGY")) {
    settings.PLACEMENT_AUTH_STRATEGY = { value: "keystone", where: `${file} (Placement's default for [api] auth_strategy)` };
  }
}

/**
 * oslo.policy looks for policy_file (default policy.yaml) next to the
 * configuration file, and uses its built-in rules when the file is not there.
 */
function resolvePolicyFile(file: string, settings: Record<string, FileSetting>, notes: ConfigNote[]): void {
  const dir = path.dirname(path.resolve(file));
  const given = settings.PLACEMENT_POLICY_FILE;
  if (given) {
    const resolved = path.resolve(dir, given.value);
    if (existsSync(resolved)) given.value = resolved;
    else {
      delete settings.PLACEMENT_POLICY_FILE;
      notes.push({ level: "info", message: `${given.where}: ${resolved} does not exist; the default policy applies` });
    }
    return;
  }
  const beside = path.join(dir, "policy.yaml");
  if (existsSync(beside)) settings.PLACEMENT_POLICY_FILE = { value: beside, where: `${file} (policy.yaml beside it, as oslo.policy finds it)` };
}

function databaseUrl(value: string, where: string): string {
  const m = /^([A-Za-z0-9]+)(\+[A-Za-z0-9_]+)?:\/\/(.*)$/s.exec(value);
  const dialect = m?.[1].toLowerCase();
  if (m && (dialect === "postgresql" || dialect === "postgres")) return `postgresql://${m[3]}`;
  if (dialect === "mysql" || dialect === "mariadb") {
    throw new ConfigError(
      `${where} is a MySQL/MariaDB database; this server keeps its data in PostgreSQL. ` +
        "Copy the data once with `placement db import --from <that URL>` into an empty PostgreSQL database, " +
        'then point connection at it (docs/moving-a-cloud.md).',
    );
  }
  throw new ConfigError(`invalid value in ${where}: a PostgreSQL URL is needed (postgresql://... or postgresql+psycopg2://...)`);
}

function authStrategy(value: string, where: string): string {
  if (value === "keystone" || value === "noauth2") return value;
  throw new ConfigError(`invalid value in ${where}: "${value}" (Placement knows keystone and noauth2)`);
}
