#!/usr/bin/python3
"""Runs upstream test cases, unchanged, against a live Placement over HTTP.

    peer_tests.py --url http://127.0.0.1:PORT TEST_ID...

osc-placement's and Nova's functional tests start Placement in process
through placement.tests.functional.fixtures.placement.PlacementFixture (Nova's
own PlacementFixture is a subclass that points Nova's report client at it).
Once the tests are loaded and before any runs, that fixture's setUp is
replaced by one that sets the endpoint to --url and empties the server
through its API, so each test starts on a server as empty as the fresh
in-memory database it expects. openstacksdk's functional tests read
clouds.yaml: one is written naming the server as the placement endpoint and
saying there is no compute, image, network or volume service. The tests'
own code is not touched; docs/peers.md says what else is adjusted and why
(one connection per request, where Nova finds its API pipeline).

    peer_tests.py --list MODULE...

prints the ids of the tests the modules hold, for the pinned lists.

Prints one JSON object per test on stdout as it finishes:
{"id": ..., "status": "passed" | "failed" | "skipped", "seconds": ..., "details": traceback or skip reason}
"""

import argparse
import importlib
import importlib.util
import json
import os
import sys
import tempfile
import time
import unittest

TOKEN = 'admin'
# The highest microversion both servers speak; the wipe uses it for
# parent_provider_uuid (1.14) and consumer listing.
WIPE_VERSION = 'placement 1.39'


def wipe(url):
    """Deletes every allocation, provider, custom resource class and custom
    trait, through the API, so it works the same on any server."""
    import requests
    headers = {'x-auth-token': TOKEN, 'openstack-api-version': WIPE_VERSION,
               'accept': 'application/json'}

    def call(method, path, ok=(200, 204, 404)):
        response = requests.request(method, url + path, headers=headers)
        if response.status_code not in ok:
            raise RuntimeError('peer wipe: %s %s -> %s %s' % (
                method, path, response.status_code, response.text[:500]))
        return response

    providers = call('GET', '/resource_providers').json()['resource_providers']
    consumers = set()
    for provider in providers:
        allocations = call(
            'GET', '/resource_providers/%s/allocations' % provider['uuid'])
        if allocations.status_code == 200:
            consumers.update(allocations.json()['allocations'])
    for consumer in sorted(consumers):
        call('DELETE', '/allocations/%s' % consumer)
    # Leaves first: a provider with children cannot be deleted.
    remaining = {p['uuid']: p for p in providers}
    while remaining:
        parents = {p['parent_provider_uuid'] for p in remaining.values()}
        leaves = [u for u in remaining if u not in parents]
        if not leaves:
            raise RuntimeError('peer wipe: a cycle among %s' % list(remaining))
        for uuid in leaves:
            call('DELETE', '/resource_providers/%s' % uuid)
            del remaining[uuid]
    for rc in call('GET', '/resource_classes').json()['resource_classes']:
        if rc['name'].startswith('CUSTOM_'):
            call('DELETE', '/resource_classes/%s' % rc['name'])
    for trait in call('GET', '/traits?name=startswith:CUSTOM_').json()['traits']:
        call('DELETE', '/traits/%s' % trait)


def one_connection_per_request():
    """The reference runs under uwsgi's http-socket, which closes each
    connection after its answer: a client's pooled connection is then reset
    on its next request. Every keystoneauth request (the openstack CLI,
    openstacksdk, Nova's report client) on a connection of its own, on both
    servers alike."""
    from keystoneauth1 import session

    request = session.Session.request

    def on_own_connection(self, url, method, **kwargs):
        self.session.close()
        return request(self, url, method, **kwargs)

    session.Session.request = on_own_connection


def point_fixture_at(url):
    """Replaces the in-process Placement of the upstream fixture by the live
    server at url (Nova's subclass calls this setUp through super())."""
    import fixtures
    from placement.tests.functional.fixtures import placement

    def setUp(self):
        fixtures.Fixture.setUp(self)
        self.endpoint = url
        wipe(url)

    placement.PlacementFixture.setUp = setUp


def write_clouds_yaml(url, directory):
    """openstacksdk's functional base reads the clouds devstack-admin,
    devstack and devstack-alt, and skips what the catalog lacks."""
    cloud = {
        'auth_type': 'admin_token',
        'auth': {'token': TOKEN, 'endpoint': url},
        'placement_endpoint_override': url,
        'identity_api_version': '3',
        'has_compute': False,
        'has_image': False,
        'has_network': False,
        'has_volume': False,
    }
    path = os.path.join(directory, 'clouds.yaml')
    with open(path, 'w') as f:
        json.dump({'clouds': {name: cloud for name in (
            'devstack-admin', 'devstack', 'devstack-alt')}}, f)
    return path


# Debian's nova-common ships the API's paste pipeline here.
NOVA_API_PASTE = '/usr/share/nova-common/api-paste.ini'


def nova_state_path():
    """Nova's test configuration looks for its API pipeline at
    $state_path/etc/nova/api-paste.ini, a path of Nova's source tree that an
    installed package does not have: a state_path of its own holds a link to
    nova-common's copy."""
    state = tempfile.mkdtemp(prefix='peers-nova-state-')
    os.makedirs(os.path.join(state, 'etc', 'nova'))
    os.symlink(NOVA_API_PASTE,
               os.path.join(state, 'etc', 'nova', 'api-paste.ini'))
    # Set in each test's configuration fixture: its cleanup clears the
    # defaults a test set, this one included.
    from nova.tests.fixtures import conf
    set_up = conf.ConfFixture.setUp

    def setUp(self):
        set_up(self)
        self.conf.set_default('state_path', state)

    conf.ConfFixture.setUp = setUp


class JsonLines(unittest.TestResult):
    """Writes each test's outcome as it ends, so a killed run keeps what
    it printed."""

    def __init__(self, out):
        super().__init__()
        self.out = out
        self.outcomes = {}
        self.started = {}

    def startTest(self, test):
        super().startTest(test)
        self.started[test.id()] = time.monotonic()

    def _record(self, test, status, details=''):
        # A test that fails in tearDown after passing reports twice; the
        # failure wins.
        if self.outcomes.get(test.id(), (None,))[0] == 'failed':
            return
        self.outcomes[test.id()] = (status, details)

    def addSuccess(self, test):
        self._record(test, 'passed')

    def addFailure(self, test, err):
        self._record(test, 'failed', self._exc_info_to_string(err, test))

    def addError(self, test, err):
        self._record(test, 'failed', self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        self._record(test, 'skipped', reason)

    def addExpectedFailure(self, test, err):
        self._record(test, 'passed')

    def addUnexpectedSuccess(self, test):
        self._record(test, 'failed', 'unexpected success')

    def stopTest(self, test):
        super().stopTest(test)
        status, details = self.outcomes.get(
            test.id(), ('failed', 'the test reported no outcome'))
        self.out.write(json.dumps({
            'id': test.id(), 'status': status, 'details': details,
            'seconds': round(time.monotonic() - self.started[test.id()], 2),
        }) + '\n')
        self.out.flush()


def module_of(test_id):
    """The longest importable prefix of a test id."""
    parts = test_id.split('(')[0].split('.')
    for end in range(len(parts), 0, -1):
        name = '.'.join(parts[:end])
        try:
            found = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            found = None
        if found is not None:
            # An error inside the module is the module's, not a wrong name.
            return importlib.import_module(name)
    raise ImportError('no module in %s' % test_id)


def flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from flatten(item)
        else:
            yield item


def tests_of(ids, everything=False):
    """The tests named by ids, in the order given, loaded module by module
    (through the load_tests protocol, so scenario tests get their ids)."""
    loader = unittest.TestLoader()
    by_id = {}
    for name in dict.fromkeys(module_of(i).__name__ for i in ids):
        for test in flatten(loader.loadTestsFromModule(
                importlib.import_module(name))):
            by_id[test.id()] = test
    if everything:
        return [by_id[i] for i in sorted(by_id)]
    return [by_id[i] for i in ids if i in by_id]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--url', help='the Placement to run against')
    parser.add_argument('--list', action='store_true',
                        help='print the ids of the tests in the named '
                             'modules instead of running them')
    parser.add_argument('ids', nargs='+',
                        help='test ids (module.Class.test); modules with '
                             '--list')
    args = parser.parse_args()
    os.environ['OS_CLIENT_CONFIG_FILE'] = write_clouds_yaml(
        args.url or 'http://127.0.0.1:1',
        tempfile.mkdtemp(prefix='peers-clouds-'))
    if args.list:
        for test in tests_of(args.ids, everything=True):
            print(test.id())
        return
    if not args.url:
        parser.error('--url is required to run tests')

    # The tests print to stdout (osc's shell, logging): the JSON lines go
    # to the real stdout, everything else to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), 'w')
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())

    # Loaded first: Nova's test modules monkey patch with eventlet on import,
    # before anything here imports the HTTP libraries.
    found = tests_of(args.ids)
    one_connection_per_request()
    point_fixture_at(args.url)
    if any(t.id().startswith('nova.') for t in found):
        nova_state_path()

    result = JsonLines(out)
    for test in found:
        test.run(result)
    for missing in sorted(set(args.ids) - {t.id() for t in found}):
        out.write(json.dumps({'id': missing, 'status': 'failed',
                              'details': 'no such test in the installed '
                                         'package', 'seconds': 0}) + '\n')
    out.close()


if __name__ == '__main__':
    main()
