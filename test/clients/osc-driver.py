"""Runs openstack CLI commands (python3-openstackclient with the
osc-placement plugin, from Debian) in this one process against a Placement
endpoint, as an operator would type them, and prints what each printed.

Usage: osc-driver.py BASE_URL < commands.json > results.json

commands.json is a list of argv lists (without the auth options, which are
added: the admin_token plugin, so noauth2's "admin" token is sent). Each
result has the exit code, stdout and stderr. One process for all commands
because starting the CLI costs seconds.
"""
import io
import json
import logging
import sys

from keystoneauth1 import session as ks_session
from openstackclient import shell

# The reference runs under uwsgi's http-socket, which closes every connection
# after its answer; the CLI's pooled connection would then be reset on its
# next request. Each request on a connection of its own, on both servers.
_request = ks_session.Session.request


def _request_on_own_connection(self, url, method, **kwargs):
    self.session.close()  # drops the pooled connections; new ones on demand
    return _request(self, url, method, **kwargs)


ks_session.Session.request = _request_on_own_connection


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    # cliff adds its console handler on every run: start each from none.
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        try:
            code = shell.OpenStackShell().run(argv)
        except SystemExit as exc:
            code = exc.code
    finally:
        sys.stdout, sys.stderr = saved
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main():
    base = sys.argv[1]
    auth = ["--os-auth-type", "admin_token", "--os-endpoint", base,
            "--os-token", "admin"]
    commands = json.load(sys.stdin)
    json.dump([run(auth + argv) for argv in commands], sys.stdout)


if __name__ == "__main__":
    main()
