/** The settings (environment variables) as `placement --help` and `placement serve --help` list them. */
export const SETTINGS_HELP = `
Settings (environment variables; each can also come from placement.conf, see docs/operating.md,
and \`placement config show\` prints what they add up to):
  PORT                         Port to listen on (default 8778).
  HOST                         Address to listen on (default 127.0.0.1).
  DATABASE_URL                 PostgreSQL URL. Unset: an embedded PostgreSQL in PLACEMENT_DATA_DIR.
  PLACEMENT_READ_DATABASE_URL  Hot standby URL(s), comma-separated, for GET /allocation_candidates; unset: all on DATABASE_URL.
  PLACEMENT_READ_MAX_LAG_SECONDS  A standby further behind than this is skipped for the primary (default 5).
  PLACEMENT_DATA_DIR           Embedded database directory (default ./.placement-data).
  PLACEMENT_EMBEDDED_DB_PORT   Port of the embedded PostgreSQL (default 5433).
  LOG_LEVEL                    debug | info | warn | error | silent (default info).
  LOG_FORMAT                   json (one object per line) | text (upstream's plain request log) (default json).
  PLACEMENT_METRICS_PORT       Serve Prometheus metrics (GET /metrics, no authentication) on this port; unset: none.
  PLACEMENT_METRICS_HOST       Its address (default HOST).
  PLACEMENT_METRICS_ON_API_PORT  Also serve GET /metrics on the API port, to admin or service callers (default false).
  PLACEMENT_DB_POOL_SIZE       Database connections per worker (default 10).
  PLACEMENT_WORKERS            HTTP worker processes (default: number of cores).
  PLACEMENT_AUTH_STRATEGY      noauth2 | keystone | trusted-proxy (default noauth2; development only).
  PLACEMENT_ALLOW_NOAUTH       Allow noauth2 on a non-loopback address (default false).
  PLACEMENT_KEYSTONE_URL       keystone: identity endpoint, e.g. https://keystone:5000/v3.
  PLACEMENT_KEYSTONE_USERNAME / _PASSWORD / _PROJECT_NAME   keystone: the service's own credentials.
  PLACEMENT_KEYSTONE_USER_DOMAIN_NAME / _PROJECT_DOMAIN_NAME   Their domains (default Default).
  PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS   How long Keystone's verdict on a token is cached (default 300; 0: never).
  PLACEMENT_KEYSTONE_TIMEOUT_SECONDS       Timeout of a call to Keystone (default 10).
  PLACEMENT_TRUSTED_PROXIES    trusted-proxy: comma-separated addresses/CIDRs whose identity headers are believed.
  PLACEMENT_ENFORCE_NEW_DEFAULTS  Policy: new defaults only (admin or service; reshaper service only) (default false).
  PLACEMENT_POLICY_FILE        Policy overrides, oslo.policy syntax (YAML, or JSON if named *.json).
  PLACEMENT_CORS_ALLOWED_ORIGINS  Comma-separated origins; unset disables CORS.
  PLACEMENT_CORS_ALLOW_HEADERS    Comma-separated extra headers allowed in CORS requests.
  PLACEMENT_MAX_BODY_BYTES     Largest accepted request body (default 10 MiB).
  PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID / _USER_ID   Ids for consumers written before 1.8.
  PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT   Retries of a write that hit a deadlock (default 10).
  PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES   Shuffle candidates (default false).
  PLACEMENT_MAX_ALLOCATION_CANDIDATES         Cap on candidates, -1 for none (default -1).
  PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY   depth-first | breadth-first.
  PLACEMENT_MAX_ANSWER_BYTES   Largest allocation candidates answer; a larger one is refused with 400, answers past twice it at once with 503 (default 64 MiB; 0: none).
  PLACEMENT_CONFIG_FILE        Placement's oslo.config file (default /etc/placement/placement.conf when it exists).
  PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI   keystone: the endpoint named in WWW-Authenticate (default PLACEMENT_KEYSTONE_URL).
  PLACEMENT_KEYSTONE_USER_DOMAIN_ID / _PROJECT_DOMAIN_ID   The credentials' domains by id (win over the names).
  PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES   Roles that make an X-Service-Token a service's (default service).
  PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES_REQUIRED   Refuse an X-Service-Token without them (default false).

Bounded waits (milliseconds, 0 for none; see docs/operating.md, "Timeouts"):
  PLACEMENT_HEADERS_TIMEOUT_MS   A client must send its request headers within this (default 20000; 408 after).
  PLACEMENT_REQUEST_TIMEOUT_MS   ... and its whole request, headers and body (default 60000; 408 after).
  PLACEMENT_KEEP_ALIVE_TIMEOUT_MS   Idle keep-alive connections close after this (default 65000; keep it above a load balancer's idle timeout).
  PLACEMENT_HANDLER_TIMEOUT_MS   A request not answered by then gets 503 (default 60000).
  PLACEMENT_DB_ACQUIRE_TIMEOUT_MS   Longest wait for a database connection, including connecting (default 5000; 503 after).
  PLACEMENT_DB_STATEMENT_TIMEOUT_MS   PostgreSQL statement_timeout of every session (default 30000; 503 after).
  PLACEMENT_DB_LOCK_TIMEOUT_MS   PostgreSQL lock_timeout of every session (default 10000; 503 after).
  PLACEMENT_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS   PostgreSQL idle_in_transaction_session_timeout (default 60000).
`;
