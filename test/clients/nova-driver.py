"""Drives Nova's own placement client (Debian's python3-nova:
nova.scheduler.client.report.SchedulerReportClient) through a compute-node
and scheduler lifecycle against one Placement endpoint, and prints what
every call returned, as JSON.

Usage: nova-driver.py BASE_URL > transcript.json

The client is built the way nova-compute builds it: eventlet monkey
patching first (as nova/cmd does), a nova.conf whose [placement] section
names the endpoint and an auth plugin (keystoneauth's admin_token, which
sends noauth2's "admin" token), and SchedulerReportClient() loading its
openstacksdk adapter from that configuration.

The transcript is a list of steps, each with what the call returned (or the
class of what it raised), the client's cached generations of the providers
it knows, the HTTP requests the client sent with their statuses, and, after
each phase, the server's state read back through GET calls. An operator's
changes behind the client's back go through plain HTTP (requests).
"""
import nova.monkey_patch  # noqa: F401  (must come first, as in nova/cmd)

import json
import logging
import os
import sys
import tempfile

from keystoneauth1 import session as ks_session
import requests

import nova.conf
from nova import context as nova_context
from nova import objects
from nova.scheduler.client import report
from nova.scheduler import utils as scheduler_utils

BASE = sys.argv[1].rstrip("/")

CN1 = "4a1d1a0e-0000-4000-8000-00000000c001"
NUMA0 = "4a1d1a0e-0000-4000-8000-00000000c010"
NUMA1 = "4a1d1a0e-0000-4000-8000-00000000c011"
PGPU0 = "4a1d1a0e-0000-4000-8000-00000000c020"
CN2 = "4a1d1a0e-0000-4000-8000-00000000c002"
SHARED = "4a1d1a0e-0000-4000-8000-00000000d001"
AGG = "4a1d1a0e-0000-4000-8000-00000000a001"
AGG_API = "4a1d1a0e-0000-4000-8000-00000000a002"
SMALL_VM = "4a1d1a0e-0000-4000-8000-00000000e001"
PINNED_VM = "4a1d1a0e-0000-4000-8000-00000000e002"
EVACUEE = "4a1d1a0e-0000-4000-8000-00000000e003"
GPU_VM = "4a1d1a0e-0000-4000-8000-00000000e004"
PMEM_VM = "4a1d1a0e-0000-4000-8000-00000000e005"
NEVER_CLAIMED = "4a1d1a0e-0000-4000-8000-00000000e0ff"
MIGRATION1 = "4a1d1a0e-0000-4000-8000-00000000f001"
MIGRATION2 = "4a1d1a0e-0000-4000-8000-00000000f002"
PROJECT = "6b3e0c1f2a4d4e5f8a9b0c1d2e3f4a5b"
USER = "7c4f1d2a3b5e4f6a9b0c1d2e3f4a5b6c"

# Every uuid above by its name, for the test's readable diffs.
NAMES = {value: name for name, value in dict(globals()).items()
         if name.isupper() and isinstance(value, str) and len(value) in (32, 36)}

CONSUMERS = [SMALL_VM, PINNED_VM, EVACUEE, GPU_VM, PMEM_VM, MIGRATION1, MIGRATION2]


def inventory(total, reserved=0, allocation_ratio=1.0, max_unit=None):
    return {"total": total, "reserved": reserved, "min_unit": 1,
            "max_unit": max_unit or total, "step_size": 1,
            "allocation_ratio": allocation_ratio}


CN1_INVENTORY = {
    "VCPU": inventory(8, allocation_ratio=4.0),
    "MEMORY_MB": inventory(16384, reserved=512, allocation_ratio=1.5),
    "VGPU": inventory(4),
}
CN2_INVENTORY = {
    "VCPU": inventory(4, allocation_ratio=2.0),
    "MEMORY_MB": inventory(8192),
}
NUMA_INVENTORY = {"PCPU": inventory(4)}
SHARED_INVENTORY = {"DISK_GB": inventory(2000, reserved=100, max_unit=500)}


# --- what the client sent ---------------------------------------------------

SENT = []
_request = ks_session.Session.request


def _recorded_request(self, url, method, **kwargs):
    # The reference runs under uwsgi's http-socket, which closes each connection after its answer:
    # a pooled connection would be found dead on the next request, and retried half a second later.
    # Every request on a connection of its own, on both servers.
    self.session.close()
    resp = _request(self, url, method, **kwargs)
    path = resp.url[len(BASE):] if resp.url.startswith(BASE) else resp.url
    SENT.append("%s %s %s -> %d" % (method, path, kwargs.get("microversion") or "-", resp.status_code))
    return resp


ks_session.Session.request = _recorded_request


# --- raw HTTP, as an operator (or the state read-back) ------------------------

def raw(method, path, version, body=None):
    headers = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement %s" % version,
               "Accept": "application/json"}
    resp = requests.request(method, BASE + path, headers=headers, json=body, timeout=30)
    return resp.status_code, (resp.json() if resp.content else None)


def read_state():
    """The server's view of every provider and consumer the lifecycle touches."""
    _, listed = raw("GET", "/resource_providers", "1.14")
    providers = {}
    for rp in sorted(listed["resource_providers"], key=lambda p: p["name"]):
        uuid = rp["uuid"]
        _, inv = raw("GET", "/resource_providers/%s/inventories" % uuid, "1.26")
        _, traits = raw("GET", "/resource_providers/%s/traits" % uuid, "1.6")
        _, aggs = raw("GET", "/resource_providers/%s/aggregates" % uuid, "1.19")
        _, usages = raw("GET", "/resource_providers/%s/usages" % uuid, "1.9")
        providers[rp["name"]] = {
            "uuid": uuid, "generation": rp["generation"],
            "parent": rp["parent_provider_uuid"], "root": rp["root_provider_uuid"],
            "inventories": inv["inventories"], "traits": sorted(traits["traits"]),
            "aggregates": sorted(aggs["aggregates"]), "usages": usages["usages"],
        }
    consumers = {}
    for consumer in CONSUMERS:
        _, allocs = raw("GET", "/allocations/%s" % consumer, "1.28")
        if allocs["allocations"]:
            consumers[NAMES[consumer]] = allocs
    _, usages = raw("GET", "/usages?project_id=%s" % PROJECT, "1.9")
    return {"providers": providers, "consumers": consumers, "project_usages": usages["usages"]}


# --- the transcript -----------------------------------------------------------

TRANSCRIPT = []


def plain(value):
    """A JSON-able, order-independent form of what a client call returned."""
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return plain(value._asdict())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "get_provider_uuids"):
        return tree_view(value)
    return value


def tree_view(tree):
    view = {}
    for uuid in tree.get_provider_uuids():
        data = tree.data(uuid)
        view[data.name] = {"uuid": uuid, "parent": data.parent_uuid, "generation": data.generation,
                           "inventory": plain(data.inventory), "traits": sorted(data.traits),
                           "aggregates": sorted(data.aggregates)}
    return view


def canonical_message(message):
    """Nova quotes Placement's error body in its exceptions: compare the document, not its spacing."""
    at = message.find('{"errors"')
    if at < 0:
        return message
    document, end = json.JSONDecoder().raw_decode(message, at)
    return message[:at] + json.dumps(document, sort_keys=True) + message[end:]


def cached_generations(client):
    tree = client._provider_tree
    return {tree.data(u).name: tree.data(u).generation for u in tree.get_provider_uuids()}


def step(name, client, call, *args, **kwargs):
    """Runs one client call and records what it returned or raised, and what it sent."""
    del SENT[:]
    entry = {"step": name}
    try:
        result = call(*args, **kwargs)
        entry["result"] = plain(result)
    except Exception as exc:  # the class is part of the client's contract
        result = None
        entry["raised"] = type(exc).__name__
        entry["message"] = canonical_message(str(exc))
    entry["sent"] = list(SENT)
    if client is not None:
        entry["cached_generations"] = cached_generations(client)
    TRANSCRIPT.append(entry)
    return result


def operator(name, method, path, version, body=None):
    status, answer = raw(method, path, version, body)
    for key in ("traits", "aggregates"):
        if isinstance(answer, dict) and key in answer:
            answer[key] = sorted(answer[key])  # sets in Placement: no order to compare
    TRANSCRIPT.append({"step": name, "operator": "%s %s %s" % (method, path, version),
                       "status": status, "result": answer})
    return answer


def state(name):
    TRANSCRIPT.append({"step": name, "state": read_state()})


# --- the scheduler's side -----------------------------------------------------

def resource_request(vcpus, memory_mb, root_gb, extra_specs=None):
    """What the scheduler asks Placement for a flavor (nova.scheduler.utils.ResourceRequest)."""
    flavor = objects.Flavor(vcpus=vcpus, memory_mb=memory_mb, root_gb=root_gb, ephemeral_gb=0,
                            swap=0, extra_specs=extra_specs or {})
    spec = objects.RequestSpec(flavor=flavor, image=objects.ImageMeta.from_dict({}), is_bfv=False)
    return scheduler_utils.ResourceRequest.from_request_spec(spec)


def candidates(name, client, request):
    """get_allocation_candidates, with the requests sorted (their order is not part of the API)."""
    found = step(name, client, client.get_allocation_candidates, CTX, request)
    entry = TRANSCRIPT[-1]
    if entry.get("result") and entry["result"][0] is not None:
        for request in entry["result"][0]:
            # Each mapping is a Python set in Placement: its order changes with every start.
            request["mappings"] = {group: sorted(uuids) for group, uuids in request.get("mappings", {}).items()}
        entry["result"][0] = sorted(entry["result"][0], key=lambda r: json.dumps(r, sort_keys=True))
        for summary in entry["result"][1].values():
            summary["traits"] = sorted(summary.get("traits", []))  # a Python set there too
    return found


def pick(found, *on):
    """The allocation request that uses exactly the providers `on` (the scheduler's weighing, made fixed)."""
    for request in found[0]:
        if set(request["allocations"]) == set(on):
            return request
    raise AssertionError("no candidate on %s in %s" % ([NAMES[u] for u in on], found[0]))


def claim(name, client, consumer, request, version):
    return step(name, client, client.claim_resources, CTX, consumer, request, PROJECT, USER, version)


# --- the compute node's side -------------------------------------------------

class Hypervisor(object):
    """What a virt driver reports for one compute node (update_provider_tree's job in Nova)."""

    def __init__(self, root, name, inventory, traits, numa_nodes=(), vgpus_on_child=False):
        self.root, self.name = root, name
        self.inventory, self.traits = dict(inventory), list(traits)
        self.numa_nodes, self.vgpus_on_child = numa_nodes, vgpus_on_child

    def update_provider_tree(self, tree, allocations):
        """Shapes the tree; returns True when it moved allocations (a reshape)."""
        for index, child in enumerate(self.numa_nodes):
            if not tree.exists(child):
                tree.new_child("%s_numa%d" % (self.name, index), self.root, uuid=child)
            tree.update_inventory(child, NUMA_INVENTORY)
            tree.add_traits(child, "HW_NUMA_ROOT")  # and keeps the traits an operator added
        root_inventory = dict(self.inventory)
        reshaped = False
        if self.vgpus_on_child:
            if not tree.exists(PGPU0):
                tree.new_child("%s_pgpu0" % self.name, self.root, uuid=PGPU0)
            tree.update_inventory(PGPU0, {"VGPU": root_inventory.pop("VGPU")})
            for record in allocations.values():
                on_root = record["allocations"].get(self.root, {}).get("resources", {})
                if "VGPU" in on_root:
                    record["allocations"][PGPU0] = {"resources": {"VGPU": on_root.pop("VGPU")}}
                    reshaped = True
        tree.update_inventory(self.root, root_inventory)
        tree.update_traits(self.root, self.traits)
        return reshaped


RETRIED = ("ResourceProviderUpdateConflict", "PlacementReshapeConflict")


def update_to_placement(label, client, hypervisor, race=None):
    """The resource tracker's periodic update: read the tree (and the allocations on it), let the
    driver shape it, flush it; on a generation conflict start again, four attempts in all.
    `race` runs once between the first read and the first flush (someone else's write)."""
    for attempt in range(1, 5):
        tag = "%s (attempt %d)" % (label, attempt)
        tree = step("%s: get_provider_tree_and_ensure_root" % tag, client,
                    client.get_provider_tree_and_ensure_root, CTX, hypervisor.root, hypervisor.name)
        allocations = step("%s: get_allocations_for_provider_tree" % tag, client,
                           client.get_allocations_for_provider_tree, CTX, hypervisor.name)
        reshaped = hypervisor.update_provider_tree(tree, allocations)
        if race and attempt == 1:
            race()
        step("%s: update_from_provider_tree%s" % (tag, " with allocations" if reshaped else ""), client,
             client.update_from_provider_tree, CTX, tree, allocations=allocations if reshaped else None)
        if TRANSCRIPT[-1].get("raised") not in RETRIED:
            return


def operator_put_traits(label, rp, change):
    _, traits = raw("GET", "/resource_providers/%s/traits" % rp, "1.6")
    operator(label, "PUT", "/resource_providers/%s/traits" % rp, "1.6",
             {"traits": change(traits["traits"]), "resource_provider_generation": traits["resource_provider_generation"]})


# --- the lifecycle ------------------------------------------------------------

BASE_TRAITS = ["HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH", "CUSTOM_FAST"]


def start_services():
    # An operator's tool sets up shared storage, offered to the members of an aggregate.
    ops = report.SchedulerReportClient()
    step("shared-storage: get_provider_tree_and_ensure_root", ops, ops.get_provider_tree_and_ensure_root, CTX,
         SHARED, "shared-storage")
    step("shared-storage: set_inventory_for_provider", ops, ops.set_inventory_for_provider, CTX, SHARED,
         SHARED_INVENTORY)
    step("shared-storage: set_traits_for_provider", ops, ops.set_traits_for_provider, CTX, SHARED,
         ["MISC_SHARES_VIA_AGGREGATE", "CUSTOM_STORAGE_SSD"])
    step("shared-storage: set_aggregates_for_provider", ops, ops.set_aggregates_for_provider, CTX, SHARED, [AGG])
    step("shared-storage: set_inventory_for_provider with a bad custom class", ops, ops.set_inventory_for_provider,
         CTX, SHARED, dict(SHARED_INVENTORY, CUSTOM_lower=inventory(1)))
    step("shared-storage: set_traits_for_provider with an unknown standard trait", ops,
         ops.set_traits_for_provider, CTX, SHARED, ["MISC_SHARES_VIA_AGGREGATE", "HW_NOT_A_TRAIT"])
    step("shared-storage: set_inventory_for_provider with reserved above total", ops,
         ops.set_inventory_for_provider, CTX, SHARED, {"DISK_GB": inventory(2000, reserved=2001)})

    # Two compute nodes start: a nested one (NUMA nodes with PCPU) and a flat one.
    host1 = Hypervisor(CN1, "compute-1", CN1_INVENTORY, BASE_TRAITS, numa_nodes=(NUMA0, NUMA1))
    host2 = Hypervisor(CN2, "compute-2", CN2_INVENTORY, ["CUSTOM_FAST"])
    compute1, compute2 = report.SchedulerReportClient(), report.SchedulerReportClient()
    update_to_placement("compute-1 starts", compute1, host1)
    update_to_placement("compute-1 periodic (nothing changed)", compute1, host1)
    update_to_placement("compute-2 starts", compute2, host2)

    # The compute API mirrors host aggregates (no cache, by name, retried on 409).
    api = report.SchedulerReportClient()
    step("api: aggregate_add_host compute-1", None, api.aggregate_add_host, CTX, AGG, host_name="compute-1")
    step("api: aggregate_add_host compute-2", None, api.aggregate_add_host, CTX, AGG, host_name="compute-2")
    step("api: aggregate_add_host compute-2 again (already there)", None, api.aggregate_add_host, CTX, AGG,
         host_name="compute-2")
    step("api: aggregate_add_host compute-2 to a second aggregate", None, api.aggregate_add_host, CTX, AGG_API,
         host_name="compute-2")
    step("api: aggregate_remove_host compute-2 from it", None, api.aggregate_remove_host, CTX, AGG_API, "compute-2")
    step("api: aggregate_add_host of an unknown host", None, api.aggregate_add_host, CTX, AGG_API,
         host_name="compute-9")
    state("after both computes started and joined the aggregate")

    # The computes' cached generations are stale now: their next writes conflict once, and they refresh.
    host1.traits = BASE_TRAITS + ["HW_CPU_X86_SSE42"]
    update_to_placement("compute-1 periodic (a new CPU trait)", compute1, host1)
    host2.inventory = dict(CN2_INVENTORY, MEMORY_MB=inventory(12288), CUSTOM_PMEM_NAMESPACE_4GB=inventory(2))
    update_to_placement("compute-2 periodic (more memory, persistent memory namespaces)", compute2, host2)

    # Writes that change nothing, behind compute-1's back. Rewriting the same traits keeps the
    # generation compute-1 cached, so its next write goes through; rewriting the same aggregates
    # bumps it (Placement's set_aggregates always does), so the write after that conflicts.
    operator_put_traits("operator: PUT the same traits on compute-1", CN1, lambda traits: traits)
    host1.traits = BASE_TRAITS
    update_to_placement("compute-1 periodic (the trait went away)", compute1, host1)
    _, aggs = raw("GET", "/resource_providers/%s/aggregates" % CN1, "1.19")
    operator("operator: PUT the same aggregates on compute-1", "PUT", "/resource_providers/%s/aggregates" % CN1,
             "1.19", {"aggregates": aggs["aggregates"], "resource_provider_generation": aggs["resource_provider_generation"]})
    host1.traits = BASE_TRAITS + ["HW_CPU_X86_SSE42"]
    update_to_placement("compute-1 periodic (the trait is back)", compute1, host1)

    # An operator raises reserved memory: the running compute does not notice (its cache agrees with
    # its driver), a restarted one reads the tree afresh and puts its own view back.
    _, inv = raw("GET", "/resource_providers/%s/inventories" % CN1, "1.26")
    changed = dict(inv["inventories"], MEMORY_MB=dict(inv["inventories"]["MEMORY_MB"], reserved=2048))
    operator("operator: raise MEMORY_MB reserved on compute-1", "PUT", "/resource_providers/%s/inventories" % CN1,
             "1.26", {"inventories": changed, "resource_provider_generation": inv["resource_provider_generation"]})
    update_to_placement("compute-1 periodic (after the operator's change)", compute1, host1)
    compute1 = report.SchedulerReportClient()
    update_to_placement("compute-1 restarted", compute1, host1)
    state("after the syncs and conflicts")
    return host1, host2, compute1, compute2


def schedule():
    """The scheduler places instances: candidates at the client's microversion, then claims."""
    scheduler = report.SchedulerReportClient()
    small = resource_request(2, 2048, 20, {"trait:CUSTOM_FAST": "required"})
    found = candidates("scheduler: candidates for a small flavor", scheduler, small)
    claim("scheduler: claim_resources small-vm on compute-1", scheduler, SMALL_VM,
          pick(found, CN1, SHARED), found[2])
    claim("scheduler: claim_resources evacuee on compute-1", scheduler, EVACUEE, pick(found, CN1, SHARED), found[2])
    claim("scheduler: claim_resources beyond capacity", scheduler, NEVER_CLAIMED,
          {"allocations": dict(pick(found, CN2, SHARED)["allocations"], **{CN2: {"resources": {"VCPU": 100}}})},
          found[2])
    pinned = resource_request(2, 1024, 10, {"hw:cpu_policy": "dedicated"})
    found = candidates("scheduler: candidates for a pinned flavor", scheduler, pinned)
    claim("scheduler: claim_resources pinned-vm on NUMA node 0", scheduler, PINNED_VM,
          pick(found, CN1, NUMA0, SHARED), found[2])
    granular = resource_request(4, 1024, 10, {"resources1:PCPU": "2", "resources2:PCPU": "2",
                                              "group_policy": "isolate"})
    candidates("scheduler: candidates for two isolated PCPU groups", scheduler, granular)
    gpu = resource_request(1, 512, 5, {"resources:VGPU": "1"})
    found = candidates("scheduler: candidates for a vGPU flavor", scheduler, gpu)
    claim("scheduler: claim_resources gpu-vm", scheduler, GPU_VM, pick(found, CN1, SHARED), found[2])
    candidates("scheduler: candidates nobody can offer", scheduler, resource_request(64, 1024, 10))
    candidates("scheduler: candidates with an unknown trait", scheduler,
               resource_request(1, 512, 5, {"trait:CUSTOM_UNKNOWN": "required"}))
    in_aggregate = resource_request(1, 512, 5, {"resources:CUSTOM_PMEM_NAMESPACE_4GB": "1",
                                                "trait:COMPUTE_VOLUME_MULTI_ATTACH": "forbidden"})
    in_aggregate.get_request_group(None).aggregates = [[AGG, AGG_API]]
    in_aggregate.get_request_group(None).forbidden_aggregates = {AGG_API}
    found = candidates("scheduler: candidates in an aggregate, with a forbidden trait", scheduler, in_aggregate)
    claim("scheduler: claim_resources pmem-vm", scheduler, PMEM_VM, pick(found, CN2, SHARED), found[2])
    # An interface attach adds a port's resources to an instance; a detach takes them away.
    step("add_resources_to_instance_allocation gpu-vm", None, scheduler.add_resources_to_instance_allocation,
         CTX, GPU_VM, {CN1: {"resources": {"VCPU": 1}}, NUMA1: {"resources": {"PCPU": 1}}})
    step("add_resources_to_instance_allocation gpu-vm beyond capacity", None,
         scheduler.add_resources_to_instance_allocation, CTX, GPU_VM, {CN1: {"resources": {"VGPU": 10}}})
    step("remove_resources_from_instance_allocation gpu-vm", None,
         scheduler.remove_resources_from_instance_allocation, CTX, GPU_VM, {NUMA1: {"resources": {"PCPU": 1}}})
    # Writes on a consumer generation someone else moved on from.
    held = scheduler.get_allocs_for_consumer(CTX, EVACUEE)
    step("put_allocations evacuee on a stale consumer generation", None, scheduler.put_allocations, CTX, EVACUEE,
         dict(held, consumer_generation=held["consumer_generation"] - 1))
    step("put_allocations evacuee as a new consumer", None, scheduler.put_allocations, CTX, EVACUEE,
         dict(held, consumer_generation=None))
    step("put_allocations pmem-vm unchanged", None, scheduler.put_allocations, CTX, PMEM_VM,
         scheduler.get_allocs_for_consumer(CTX, PMEM_VM))
    step("get_allocations_for_resource_provider compute-1", None,
         scheduler.get_allocations_for_resource_provider, CTX, CN1)
    step("get_provider_by_name compute-2", None, scheduler.get_provider_by_name, CTX, "compute-2")
    step("get_resource_provider_name of NUMA node 0", None, scheduler.get_resource_provider_name, CTX, NUMA0)
    step("scheduler: get_usages_counts_for_quota", None, scheduler.get_usages_counts_for_quota, CTX, PROJECT, USER)
    step("scheduler: get_usages_counts_for_limits", None, scheduler.get_usages_counts_for_limits, CTX, PROJECT)
    state("after scheduling")
    return scheduler


def move(scheduler, compute1):
    small = resource_request(2, 2048, 20, {"trait:CUSTOM_FAST": "required"})
    resized = resource_request(4, 4096, 20)
    # Resize small-vm to compute-2 and revert: the source allocation waits on the migration consumer.
    step("conductor: move_allocations small-vm -> migration-1", None, scheduler.move_allocations, CTX, SMALL_VM,
         MIGRATION1)
    step("get_allocs_for_consumer migration-1", None, scheduler.get_allocs_for_consumer, CTX, MIGRATION1)
    found = candidates("scheduler: candidates for the new flavor", scheduler, resized)
    claim("scheduler: claim_resources small-vm on compute-2", scheduler, SMALL_VM, pick(found, CN2, SHARED),
          found[2])
    state("during the resize")
    step("revert: move_allocations migration-1 -> small-vm (overwrites the destination's)", None,
         scheduler.move_allocations, CTX, MIGRATION1, SMALL_VM)
    step("get_allocs_for_consumer small-vm", None, scheduler.get_allocs_for_consumer, CTX, SMALL_VM)
    step("get_allocations_for_consumer migration-1 (gone)", None, scheduler.get_allocations_for_consumer, CTX,
         MIGRATION1)
    # Resize again, and confirm: the migration's hold on the source is dropped.
    step("conductor: move_allocations small-vm -> migration-2", None, scheduler.move_allocations, CTX, SMALL_VM,
         MIGRATION2)
    claim("scheduler: claim_resources small-vm on compute-2 again", scheduler, SMALL_VM, pick(found, CN2, SHARED),
          found[2])
    step("confirm: delete_allocation_for_instance migration-2", None, scheduler.delete_allocation_for_instance,
         CTX, MIGRATION2, consumer_type="migration")
    step("move_allocations migration-2 -> small-vm (already moved)", None, scheduler.move_allocations, CTX,
         MIGRATION2, SMALL_VM)

    # Evacuate evacuee to compute-2: the claim doubles it up; the recovered source drops its part.
    found = candidates("scheduler: candidates for the evacuation", scheduler, small)
    step("forced evacuation on a stale consumer generation", None, scheduler.claim_resources, CTX, EVACUEE,
         dict(pick(found, CN2, SHARED), consumer_generation=0), PROJECT, USER, found[2])
    claim("scheduler: claim_resources evacuee on compute-2 (doubled up)", scheduler, EVACUEE,
          pick(found, CN2, SHARED), found[2])
    step("get_allocations_for_consumer evacuee (both hosts)", None, scheduler.get_allocations_for_consumer, CTX,
         EVACUEE)
    step("compute-1: remove_provider_tree_from_instance_allocation evacuee", None,
         compute1.remove_provider_tree_from_instance_allocation, CTX, EVACUEE, CN1)
    step("compute-1: remove_provider_tree_from_instance_allocation evacuee again", None,
         compute1.remove_provider_tree_from_instance_allocation, CTX, EVACUEE, CN1)
    state("after the moves")


def reshape(host1, compute1):
    """The libvirt driver's vGPU reshape: VGPU inventory and its allocations move from the root to a
    new child provider, atomically (update_from_provider_tree with allocations: POST /reshaper).
    Someone changes a NUMA node between the first read and the flush: that reshape must fail as a
    conflict, and the tracker's second attempt must go through."""
    def someone_repairs_numa1():
        operator("operator: create CUSTOM_REPAIRED", "PUT", "/traits/CUSTOM_REPAIRED", "1.6")
        operator_put_traits("operator: add it to NUMA node 1", NUMA1, lambda traits: traits + ["CUSTOM_REPAIRED"])

    host1.vgpus_on_child = True
    update_to_placement("compute-1 reshapes its vGPUs", compute1, host1, race=someone_repairs_numa1)
    state("after the reshape")


def tear_down(scheduler, compute1, compute2, host2):
    step("delete_allocation_for_instance small-vm", None, scheduler.delete_allocation_for_instance, CTX, SMALL_VM)
    step("delete_allocation_for_instance pinned-vm (force)", None, scheduler.delete_allocation_for_instance, CTX,
         PINNED_VM, force=True)
    step("delete_allocation_for_instance never-claimed", None, scheduler.delete_allocation_for_instance, CTX,
         NEVER_CLAIMED)
    step("delete_allocation_for_instance never-claimed (force)", None, scheduler.delete_allocation_for_instance,
         CTX, NEVER_CLAIMED, force=True)
    node2 = objects.ComputeNode(uuid=CN2, host="compute-2", hypervisor_hostname="compute-2")
    # compute-2 loses its persistent memory while pmem-vm uses it: after a refresh, the write is refused.
    host2.inventory = CN2_INVENTORY
    update_to_placement("compute-2 periodic (the pmem namespaces are gone)", compute2, host2)
    step("delete_allocation_for_instance pmem-vm", None, scheduler.delete_allocation_for_instance, CTX, PMEM_VM)
    step("compute-2: delete_resource_provider while evacuee is on it", compute2, compute2.delete_resource_provider,
         CTX, node2)
    state("before the last deletes")
    step("delete_allocation_for_instance evacuee", None, scheduler.delete_allocation_for_instance, CTX, EVACUEE)
    step("delete_allocation_for_instance gpu-vm", None, scheduler.delete_allocation_for_instance, CTX, GPU_VM)
    step("compute-2: delete_resource_provider", compute2, compute2.delete_resource_provider, CTX, node2)
    node1 = objects.ComputeNode(uuid=CN1, host="compute-1", hypervisor_hostname="compute-1")
    step("compute-1: delete_resource_provider (its whole tree)", compute1, compute1.delete_resource_provider,
         CTX, node1)
    step("scheduler: get_usages_counts_for_quota at the end", None, scheduler.get_usages_counts_for_quota, CTX,
         PROJECT, USER)
    state("at the end")


def lifecycle():
    host1, host2, compute1, compute2 = start_services()
    scheduler = schedule()
    move(scheduler, compute1)
    reshape(host1, compute1)
    tear_down(scheduler, compute1, compute2, host2)


def configure():
    with tempfile.TemporaryDirectory(prefix="nova-driver-") as confdir:
        path = os.path.join(confdir, "nova.conf")
        with open(path, "w") as conf:
            conf.write("[placement]\nauth_type = admin_token\nendpoint = %s\ntoken = admin\n"
                       "endpoint_override = %s\n" % (BASE, BASE))
        # Read once, here: nothing reads the file again.
        nova.conf.CONF(["--config-file", path], project="nova", default_config_files=[])
    objects.register_all()
    # Nova logs each failed call it handles; the transcript says what happened.
    logging.getLogger().setLevel(logging.CRITICAL)


CTX = None

if __name__ == "__main__":
    configure()
    CTX = nova_context.get_admin_context()
    try:
        lifecycle()
    except Exception as exc:  # the transcript so far shows where the two servers parted
        TRANSCRIPT.append({"step": "aborted", "raised": "%s: %s" % (type(exc).__name__, exc)})
    json.dump({"names": NAMES, "steps": TRANSCRIPT}, sys.stdout, indent=1, sort_keys=True)
