#!/usr/bin/env bash
# Writes a placement.conf as kolla-ansible's template lays one out (its sections, option names
# and value forms: a mysql+pymysql-style SQLAlchemy URL becomes postgresql+psycopg2, keystone
# credentials by domain id, memcache settings, [oslo_concurrency], [oslo_middleware], ...).
# Usage: write-kolla-conf.sh FILE SQLALCHEMY_URL [AUTH_STRATEGY] [POLICY_MODE] [CORS]
#   POLICY_MODE: default | open | secure-rbac | legacy-rbac (as the conformance runner names them);
#   open writes policy.yaml beside FILE, which the server finds there as oslo.policy would.
set -euo pipefail
file=$1 url=$2 auth=${3:-keystone} policy=${4:-default} cors=${5:-off}
dir=$(dirname "$file")
case $policy in
  secure-rbac) enforce="enforce_new_defaults = True
enforce_scope = True" ;;
  default|legacy-rbac|open) enforce="enforce_new_defaults = False
enforce_scope = True" ;;
  *) echo "write-kolla-conf: unknown policy mode '$policy'" >&2; exit 2 ;;
esac
if [ "$policy" = open ]; then
  # Every placement rule but admin_api opened to anyone, as upstream's OpenPolicyFixture.
  node --input-type=module -e "
    const { API_RULES } = await import('$(pwd)/dist/src/auth/policy-defaults.js');
    process.stdout.write(JSON.stringify(Object.fromEntries(API_RULES.map((r) => [r.name, '@'])), null, 1));
  " > "$dir/policy.yaml"
fi
cat > "$file" <<CONF
[DEFAULT]
debug = False
log_dir = /var/log/kolla/placement
state_path = /var/lib/placement

[oslo_concurrency]
lock_path = \$state_path/tmp

[api]
auth_strategy = $auth

[placement_database]
connection = $url
max_retries = -1
connection_recycle_time = 10
max_pool_size = 5

[oslo_middleware]
enable_proxy_headers_parsing = True

[keystone_authtoken]
service_type = placement
www_authenticate_uri = http://keystone.invalid:5000
auth_url = http://keystone.invalid:5000
auth_type = password
project_domain_id = default
user_domain_id = default
project_name = service
username = placement
password = kolla-secret
service_token_roles_required = True
region_name = RegionOne
memcache_security_strategy = ENCRYPT
memcache_secret_key = 0123456789abcdef
memcached_servers = 127.0.0.1:11211

[oslo_policy]
$enforce

[placement]
allocation_conflict_retry_count = 10
CONF
if [ "$cors" = on ]; then
  printf '\n[cors]\nallowed_origin = http://valid.example.com\nallow_headers = openstack-api-version\n' >> "$file"
fi
