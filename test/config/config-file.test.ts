import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadSettings } from "../../src/config.js";
import { describeConfig, showConfig } from "../../src/config-show.js";
import { parseList } from "../../src/config-ini.js";

function confFile(text: string, extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "placement-conf-"));
  for (const [name, content] of Object.entries(extra)) writeFileSync(path.join(dir, name), content);
  const file = path.join(dir, "placement.conf");
  writeFileSync(file, text);
  return file;
}

const load = (text: string, env: Record<string, string> = {}, extra: Record<string, string> = {}) => {
  const file = confFile(text, extra);
  return { file, ...loadSettings({ PLACEMENT_CONFIG_FILE: file, ...env }) };
};

describe("placement.conf", () => {
  it("maps every option the server honours onto its setting, saying where each came from", () => {
    const { config, sources, file, notes } = load(`
[DEFAULT]
debug = True
[placement_database]
connection = postgresql+psycopg2://placement:pw@db.example:5432/placement
max_pool_size = 7
slave_connection = postgresql+psycopg2://placement:pw@replica.example:5432/placement
[api]
auth_strategy = keystone
[keystone_authtoken]
auth_url = http://keystone.example:5000
www_authenticate_uri = https://public.example:5000
auth_type = password
username = placement
password = "secret with spaces"
project_name = service
user_domain_name = Users
project_domain_id = default
service_token_roles = service, admin
service_token_roles_required = true
token_cache_time = 30
[placement]
randomize_allocation_candidates = yes
max_allocation_candidates = 1000
allocation_candidates_generation_strategy = breadth-first
allocation_conflict_retry_count = 3
incomplete_consumer_project_id = p-missing
incomplete_consumer_user_id = u-missing
[oslo_policy]
enforce_new_defaults = True
enforce_scope = True
[cors]
allowed_origin = [https://a.example, "https://b.example"]
allow_headers = openstack-api-version,x-custom
[workarounds]
optimize_for_wide_provider_trees = True
`);
    expect(config).toMatchObject({
      LOG_LEVEL: "debug",
      DATABASE_URL: "postgresql://placement:pw@db.example:5432/placement",
      PLACEMENT_DB_POOL_SIZE: 7,
      PLACEMENT_READ_DATABASE_URL: ["postgresql://placement:pw@replica.example:5432/placement"],
      PLACEMENT_AUTH_STRATEGY: "keystone",
      PLACEMENT_KEYSTONE_URL: "http://keystone.example:5000",
      PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI: "https://public.example:5000",
      PLACEMENT_KEYSTONE_USERNAME: "placement",
      PLACEMENT_KEYSTONE_PASSWORD: "secret with spaces",
      PLACEMENT_KEYSTONE_PROJECT_NAME: "service",
      PLACEMENT_KEYSTONE_USER_DOMAIN_NAME: "Users",
      PLACEMENT_KEYSTONE_PROJECT_DOMAIN_ID: "default",
      PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES: ["service", "admin"],
      PLACEMENT_KEYSTONE_SERVICE_TOKEN_ROLES_REQUIRED: true,
      PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS: 30,
      PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: true,
      PLACEMENT_MAX_ALLOCATION_CANDIDATES: 1000,
      PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY: "breadth-first",
      PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT: 3,
      PLACEMENT_INCOMPLETE_CONSUMER_PROJECT_ID: "p-missing",
      PLACEMENT_INCOMPLETE_CONSUMER_USER_ID: "u-missing",
      PLACEMENT_ENFORCE_NEW_DEFAULTS: true,
      PLACEMENT_CORS_ALLOWED_ORIGINS: ["https://a.example", "https://b.example"],
      PLACEMENT_CORS_ALLOW_HEADERS: ["openstack-api-version", "x-custom"],
    });
    expect(sources.PLACEMENT_DB_POOL_SIZE).toBe(`${file} [placement_database] max_pool_size`);
    expect(sources.PORT).toBe("default");
    expect(notes.map((n) => n.message)).toEqual([
      expect.stringMatching(/\[workarounds\] optimize_for_wide_provider_trees has no effect here: .*engine works that way always/),
    ]);
  });

  it("lets the environment override the file", () => {
    const { config, sources } = load("[placement]\nallocation_conflict_retry_count = 3\n[api]\nauth_strategy = noauth2\n", {
      PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT: "5",
    });
    expect(config.PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT).toBe(5);
    expect(sources.PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT).toBe("environment PLACEMENT_ALLOCATION_CONFLICT_RETRY_COUNT");
  });

  it("an environment value wins even over a file value that would be refused", () => {
    const { config } = load("[placement_database]\nconnection = mysql+pymysql://p:p@db/placement\n[api]\nauth_strategy = noauth2\n", {
      DATABASE_URL: "postgresql://127.0.0.1/placement",
    });
    expect(config.DATABASE_URL).toBe("postgresql://127.0.0.1/placement");
  });

  it("warns about unknown sections and options, and notes known ones that have no effect", () => {
    const { notes, file } = load("[api]\nauth_strategy = noauth2\nfrobnicate = 1\n[nonsense]\na = b\n[oslo_concurrency]\nlock_path = /x\n[placement_database]\nmax_retries = -1\n");
    expect(notes).toEqual([
      { level: "warn", message: `${file} [api] frobnicate: unknown option ignored` },
      { level: "warn", message: `${file}: unknown section [nonsense] ignored` },
      { level: "info", message: expect.stringContaining(`${file}: section [oslo_concurrency] has no effect here`) },
      { level: "info", message: expect.stringContaining(`${file} [placement_database] max_retries has no effect here`) },
    ]);
  });

  it("stops on a bad value, naming file, section and option", () => {
    const bad = (text: string) => () => load(`[api]\nauth_strategy = noauth2\n${text}`);
    expect(bad("[placement]\nallocation_conflict_retry_count = many\n")).toThrow(
      /^invalid value in \S+placement\.conf \[placement\] allocation_conflict_retry_count: "many" is not an integer$/,
    );
    expect(bad("[placement]\nallocation_conflict_retry_count = 1000\n")).toThrow(
      /^invalid value in \S+placement\.conf \[placement\] allocation_conflict_retry_count: /,
    );
    expect(bad("[placement]\nrandomize_allocation_candidates = perhaps\n")).toThrow(/\[placement\] randomize_allocation_candidates: "perhaps" is not a boolean/);
    expect(bad("[placement]\nallocation_candidates_generation_strategy = sideways\n")).toThrow(
      /\[placement\] allocation_candidates_generation_strategy: /,
    );
    expect(bad("[keystone_authtoken]\nauth_type = v3token\n")).toThrow(/\[keystone_authtoken\] auth_type: "v3token" is not supported/);
    expect(bad("[placement_database]\nconnection = sqlite:////tmp/p.db\n")).toThrow(/\[placement_database\] connection: a PostgreSQL URL is needed/);
    expect(() => load("[api]\nauth_strategy = none\n")).toThrow(/\[api\] auth_strategy: "none"/);
    expect(() => load("not an ini line\n")).toThrow(ConfigError);
  });

  it("points a MySQL connection at `placement db import`", () => {
    expect(() => load("[placement_database]\nconnection = mysql+pymysql://placement:pw@db/placement\n")).toThrow(
      /\[placement_database\] connection is a MySQL\/MariaDB database; .*placement db import --from/,
    );
  });

  it("defaults to keystone as Placement does when the file does not choose", () => {
    const { config, sources } = load("[keystone_authtoken]\nauth_url = http://k:5000\nusername = u\npassword = p\nproject_name = service\n");
    expect(config.PLACEMENT_AUTH_STRATEGY).toBe("keystone");
    expect(sources.PLACEMENT_AUTH_STRATEGY).toMatch(/Placement's default for \[api\] auth_strategy/);
  });

  it("substitutes $references, keeps $$, joins continuation lines and takes the last repeat", () => {
    const { config } = load(
      "[DEFAULT]\nbase = /etc/placement\n[api]\nauth_strategy = noauth2\n[oslo_policy]\npolicy_file = $base/rules.yaml\n" +
        "[keystone_authtoken]\npassword = pa$$word\nusername = first\nusername = second\n[cors]\nallowed_origin = https://a.example,\n  https://b.example\n",
      {},
      {},
    );
    expect(config.PLACEMENT_KEYSTONE_PASSWORD).toBe("pa$word");
    expect(config.PLACEMENT_KEYSTONE_USERNAME).toBe("second");
    expect(config.PLACEMENT_CORS_ALLOWED_ORIGINS).toEqual(["https://a.example", "https://b.example"]);
    // The file named does not exist: oslo.policy then uses its defaults.
    expect(config.PLACEMENT_POLICY_FILE).toBeUndefined();
    expect(() => load("[api]\nauth_strategy = noauth2\n[keystone_authtoken]\npassword = pa$word\n")).toThrow(
      /\[keystone_authtoken\] password: refers to \$word, which is not set/,
    );
  });

  it("finds policy.yaml beside the file as oslo.policy does, and resolves a relative policy_file against it", () => {
    const beside = load("[api]\nauth_strategy = noauth2\n", {}, { "policy.yaml": "{}\n" });
    expect(beside.config.PLACEMENT_POLICY_FILE).toBe(path.join(path.dirname(beside.file), "policy.yaml"));
    const named = load("[api]\nauth_strategy = noauth2\n[oslo_policy]\npolicy_file = mine.yaml\n", {}, { "mine.yaml": "{}\n" });
    expect(named.config.PLACEMENT_POLICY_FILE).toBe(path.join(path.dirname(named.file), "mine.yaml"));
  });

  it("refuses a named file that does not exist", () => {
    expect(() => loadSettings({ PLACEMENT_CONFIG_FILE: "/nonexistent/placement.conf" })).toThrow(/\/nonexistent\/placement\.conf does not exist/);
  });

  it("`config show` masks secrets and says where each value came from", () => {
    const loaded = load("[placement_database]\nconnection = postgresql://placement:topsecret@db/placement\n[keystone_authtoken]\nauth_url = http://k:5000\nusername = u\npassword = hunter2\nproject_name = service\n");
    const text = describeConfig(showConfig(loaded));
    expect(text).not.toMatch(/topsecret|hunter2/);
    expect(text).toMatch(/^DATABASE_URL += postgresql:\/\/placement:\*\*\*\*@db\/placement {2}# \S+ \[placement_database\] connection$/m);
    expect(text).toMatch(/^PLACEMENT_KEYSTONE_PASSWORD += \*\*\*\* {2}# /m);
    expect(text).toMatch(/^PORT += 8778 {2}# default$/m);
  });
});

describe("oslo.config list syntax", () => {
  it.each([
    ["a,b", ["a", "b"]],
    [" a , b ,", ["a", "b"]],
    ["[a, b]", ["a", "b"]],
    ['"x,y", z', ["x,y", "z"]],
    ["", []],
  ])("%s", (input, expected) => expect(parseList(input)).toEqual(expected));
});
