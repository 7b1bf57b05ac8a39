/**
 * A small but realistic cloud, built through a Placement server's own API as
 * Nova, Neutron, Cyborg and an operator would build it, for the import tests:
 *   - six compute nodes; three with NUMA children, each with an SR-IOV
 *     physical function under it (three levels) and one with a GPU child;
 *   - a shared-storage provider in an aggregate with four of them
 *     (MISC_SHARES_VIA_AGGREGATE), a second aggregate, a bare-metal node with
 *     a custom class;
 *   - custom resource classes and traits, a disabled compute node;
 *   - a provider deleted (a gap in the ids) and one moved under a newer parent;
 *   - instances of several projects and users, resized (consumer generations
 *     above 0), one mid-migration (a MIGRATION consumer holding the source
 *     host, the INSTANCE the destination), consumers written before consumer
 *     types (1.28) and before project/user (1.0: an incomplete consumer),
 *     one deleted, and instances using the shared disk and nested resources.
 */
import { randomUUID } from "node:crypto";

export interface Api {
  call(method: string, path: string, version: string, body?: unknown): Promise<{ status: number; body: any }>;
}

export function httpApi(baseUrl: string): Api {
  return {
    async call(method, path, version, body) {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: {
          "x-auth-token": "admin",
          "openstack-api-version": `placement ${version}`,
          accept: "application/json",
          // uwsgi's http-socket closes every connection after one answer: never reuse one.
          connection: "close",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
  };
}

export interface Cloud {
  providers: string[];
  consumers: string[];
  projects: string[];
  aggregates: string[];
}

export async function buildCloud(api: Api): Promise<Cloud> {
  const providers: string[] = [];
  const consumers: string[] = [];
  const ok = async (method: string, path: string, version: string, body?: unknown) => {
    const res = await api.call(method, path, version, body);
    if (res.status >= 300) throw new Error(`${method} ${path} @${version} -> ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const generation = async (rp: string) => (await ok("GET", `/resource_providers/${rp}`, "1.39")).generation as number;
  const provider = async (name: string, parent?: string) => {
    const uuid = randomUUID();
    await ok("POST", "/resource_providers", "1.20", { name, uuid, ...(parent ? { parent_provider_uuid: parent } : {}) });
    providers.push(uuid);
    return uuid;
  };
  const inventory = async (rp: string, inventories: Record<string, Record<string, number>>) =>
    ok("PUT", `/resource_providers/${rp}/inventories`, "1.39", { resource_provider_generation: await generation(rp), inventories });
  const traits = async (rp: string, names: string[]) =>
    ok("PUT", `/resource_providers/${rp}/traits`, "1.39", { resource_provider_generation: await generation(rp), traits: names });
  const aggregates = async (rp: string, aggs: string[]) =>
    ok("PUT", `/resource_providers/${rp}/aggregates`, "1.39", { resource_provider_generation: await generation(rp), aggregates: aggs });

  for (const rc of ["CUSTOM_GPU_A100", "CUSTOM_BAREMETAL_GOLD", "CUSTOM_LICENSE_WINDOWS"]) await ok("PUT", `/resource_classes/${rc}`, "1.7");
  for (const t of ["CUSTOM_RACK_A", "CUSTOM_RACK_B", "CUSTOM_FAST_NET", "CUSTOM_UNUSED_TRAIT"]) await ok("PUT", `/traits/${t}`, "1.6");

  const agg1 = randomUUID();
  const agg2 = randomUUID();
  const agg3 = randomUUID();
  const computes: string[] = [];
  const numa: string[][] = [];
  const pfs: string[] = [];
  for (let i = 1; i <= 6; i++) {
    const cn = await provider(`compute-${i}.example.org`);
    computes.push(cn);
    await inventory(cn, {
      VCPU: { total: 32, allocation_ratio: i % 2 ? 4.0 : 16.0, max_unit: 32 },
      MEMORY_MB: { total: 131072, reserved: 2048, max_unit: 131072, allocation_ratio: 1.5 },
      DISK_GB: { total: 500, reserved: 10, step_size: 1, max_unit: 500 },
    });
    await traits(cn, ["HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH", i <= 3 ? "CUSTOM_RACK_A" : "CUSTOM_RACK_B", ...(i === 6 ? ["COMPUTE_STATUS_DISABLED"] : [])]);
    await aggregates(cn, i <= 4 ? [agg1, agg3] : [agg2]);
    if (i <= 3) {
      const cells: string[] = [];
      for (let n = 0; n < 2; n++) {
        const cell = await provider(`compute-${i}.example.org_numa${n}`, cn);
        cells.push(cell);
        await inventory(cell, { PCPU: { total: 8, max_unit: 8 }, MEMORY_MB: { total: 65536, max_unit: 65536, min_unit: 256, step_size: 256 } });
        await traits(cell, ["HW_NUMA_ROOT"]);
        const pf = await provider(`compute-${i}.example.org_numa${n}_pf${n}`, cell);
        pfs.push(pf);
        await inventory(pf, { SRIOV_NET_VF: { total: 16, max_unit: 16 }, NET_BW_EGR_KILOBIT_PER_SEC: { total: 10_000_000, max_unit: 10_000_000, reserved: 1000 } });
        await traits(pf, ["CUSTOM_FAST_NET", "HW_NIC_SRIOV"]);
      }
      numa.push(cells);
    }
  }
  const gpu = await provider("compute-1.example.org_gpu0", computes[0]);
  await inventory(gpu, { CUSTOM_GPU_A100: { total: 4, max_unit: 2 } });
  const storage = await provider("shared-storage-ceph");
  await inventory(storage, { DISK_GB: { total: 100000, reserved: 100, max_unit: 2000, allocation_ratio: 1.0 } });
  await traits(storage, ["MISC_SHARES_VIA_AGGREGATE", "STORAGE_DISK_SSD"]);
  await aggregates(storage, [agg1]);
  const ironic = await provider("ironic-node-gold-1");
  await inventory(ironic, { CUSTOM_BAREMETAL_GOLD: { total: 1, max_unit: 1, min_unit: 1 } });
  await aggregates(ironic, [agg2]);
  const license = await provider("license-pool");
  await inventory(license, { CUSTOM_LICENSE_WINDOWS: { total: 50, max_unit: 4 } });
  await traits(license, ["MISC_SHARES_VIA_AGGREGATE"]);
  await aggregates(license, [agg3]);

  // A provider deleted (leaves a gap in the ids) and one moved under a newer parent (1.37).
  const doomed = await provider("decommissioned-node");
  await ok("DELETE", `/resource_providers/${doomed}`, "1.39");
  providers.splice(providers.indexOf(doomed), 1);
  const spare = await provider("spare-accelerator");
  await inventory(spare, { CUSTOM_GPU_A100: { total: 2, max_unit: 1 } });
  const rack = await provider("compute-2.example.org_accelerators", computes[1]);
  await ok("PUT", `/resource_providers/${spare}`, "1.37", { name: "spare-accelerator", parent_provider_uuid: rack });

  const projects = [randomUUID(), randomUUID(), randomUUID()];
  const users = [randomUUID(), randomUUID()];
  const put = async (consumer: string, allocations: Record<string, Record<string, number>>, opts: { version?: string; type?: string; project?: number; user?: number } = {}) => {
    const version = opts.version ?? "1.38";
    const current = await ok("GET", `/allocations/${consumer}`, "1.38");
    const body: Record<string, unknown> = {
      allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
      project_id: projects[opts.project ?? 0],
      user_id: users[opts.user ?? 0],
      consumer_generation: current.consumer_generation ?? null,
    };
    if (version === "1.38") body.consumer_type = opts.type ?? "INSTANCE";
    if (version === "1.28") delete body.consumer_type;
    await ok("PUT", `/allocations/${consumer}`, version, body);
    if (!consumers.includes(consumer)) consumers.push(consumer);
  };

  // Instances, some resized (each resize bumps the consumer generation).
  for (let i = 0; i < 10; i++) {
    const vm = randomUUID();
    const host = computes[i % 5];
    await put(vm, { [host]: { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 20 } }, { project: i % 3, user: i % 2 });
    if (i % 3 === 0) await put(vm, { [host]: { VCPU: 4, MEMORY_MB: 8192, DISK_GB: 40 } }, { project: i % 3, user: i % 2 });
    if (i % 4 === 0) await put(vm, { [host]: { VCPU: 8, MEMORY_MB: 16384, DISK_GB: 40 } }, { project: i % 3, user: i % 2 });
  }
  // A boot-from-volume-like instance on shared storage, one with pinned CPUs and VFs on nested providers.
  const shared = randomUUID();
  await put(shared, { [computes[0]]: { VCPU: 2, MEMORY_MB: 2048 }, [storage]: { DISK_GB: 100 } }, { project: 1 });
  const pinned = randomUUID();
  await put(pinned, { [numa[0][0]]: { PCPU: 4, MEMORY_MB: 8192 }, [pfs[0]]: { SRIOV_NET_VF: 2, NET_BW_EGR_KILOBIT_PER_SEC: 100000 }, [gpu]: { CUSTOM_GPU_A100: 1 } }, { project: 2, user: 1 });
  await put(pinned, { [numa[0][1]]: { PCPU: 4, MEMORY_MB: 8192 }, [pfs[1]]: { SRIOV_NET_VF: 2, NET_BW_EGR_KILOBIT_PER_SEC: 100000 }, [gpu]: { CUSTOM_GPU_A100: 2 } }, { project: 2, user: 1 });
  const windows = randomUUID();
  await put(windows, { [computes[2]]: { VCPU: 4, MEMORY_MB: 8192, DISK_GB: 80 }, [license]: { CUSTOM_LICENSE_WINDOWS: 1 } }, { project: 0 });
  const baremetal = randomUUID();
  await put(baremetal, { [ironic]: { CUSTOM_BAREMETAL_GOLD: 1 } }, { project: 1, user: 1 });

  // Mid-migration: the migration record holds the source host, the instance the destination.
  const migrating = randomUUID();
  await put(migrating, { [computes[3]]: { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 20 } }, { project: 2 });
  const migration = randomUUID();
  const vmNow = await ok("GET", `/allocations/${migrating}`, "1.38");
  await ok("POST", "/allocations", "1.38", {
    [migration]: {
      allocations: { [computes[3]]: { resources: { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 20 } } },
      project_id: projects[2],
      user_id: users[0],
      consumer_generation: null,
      consumer_type: "MIGRATION",
    },
    [migrating]: {
      allocations: { [computes[4]]: { resources: { VCPU: 2, MEMORY_MB: 4096, DISK_GB: 20 } } },
      project_id: projects[2],
      user_id: users[0],
      consumer_generation: vmNow.consumer_generation,
      consumer_type: "INSTANCE",
    },
  });
  consumers.push(migration);

  // Written by older clients: no consumer type (1.28), no project or user (1.0).
  const old = randomUUID();
  await put(old, { [computes[1]]: { VCPU: 1, MEMORY_MB: 512 } }, { version: "1.28", project: 1 });
  const ancient = randomUUID();
  await ok("PUT", `/allocations/${ancient}`, "1.0", { allocations: [{ resource_provider: { uuid: computes[4] }, resources: { VCPU: 1, MEMORY_MB: 256 } }] });
  consumers.push(ancient);

  // A consumer that came and went.
  const gone = randomUUID();
  await put(gone, { [computes[0]]: { VCPU: 1, MEMORY_MB: 512 } });
  await ok("DELETE", `/allocations/${gone}`, "1.38");
  consumers.splice(consumers.indexOf(gone), 1);

  return { providers, consumers, projects, aggregates: [agg1, agg2, agg3] };
}
