/** The settings (environment variables) as `placement --help` and `placement serve --help` list them. */
export const SETTINGS_HELP = `
Settings (environment variables):
  PORT                         Port to listen on (default 8778).
  HOST                         Address to listen on (default 127.0.0.1).
  DATABASE_URL                 PostgreSQL URL. Unset: an embedded PostgreSQL in PLACEMENT_DATA_DIR.
  PLACEMENT_DATA_DIR           Embedded database directory (default ./.placement-data).
  PLACEMENT_EMBEDDED_DB_PORT   Port of the embedded PostgreSQL (default 5433).
  LOG_LEVEL                    debug | info | warn | error | silent (default info).
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
`;
