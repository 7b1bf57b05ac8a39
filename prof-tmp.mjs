import http from "node:http";
import { spawn } from "node:child_process";
import { createDb, dropDb, load, startOurs } from "./dist/bench/candidates.js";
const url = await createDb("prof_nested");
let s = await startOurs(url, 18999);
await load(url, "nested", 1000, "ours");
s.proc.kill("SIGTERM"); await new Promise((r) => setTimeout(r, 1500));
const proc = spawn(process.execPath, ["--cpu-prof", "--cpu-prof-dir=/tmp/prof", "--max-old-space-size=256", "--max-semi-space-size=32", "--initial-old-space-size=96", "dist/src/cli.js", "serve"], { env: { ...process.env, PORT: "18999", HOST: "127.0.0.1", DATABASE_URL: url, PLACEMENT_AUTH_STRATEGY: "noauth2", PLACEMENT_ALLOW_NOAUTH: "true", PLACEMENT_WORKERS: "1", LOG_LEVEL: "warn" }, stdio: "inherit" });
await new Promise((r) => setTimeout(r, 2500));
const q = "/allocation_candidates?resources=VCPU:2,MEMORY_MB:1024,DISK_GB:10&resources_N1=SRIOV_NET_VF:1&resources_N2=SRIOV_NET_VF:1&group_policy=isolate";
const get = () => new Promise((res, rej) => http.get({ host: "127.0.0.1", port: 18999, path: q, headers: { "x-auth-token": "admin", "openstack-api-version": "placement 1.39" } }, (r) => { let n = 0; r.on("data", (c) => (n += c.length)); r.on("end", () => res(n)); }).on("error", rej));
const times = [];
for (let i = 0; i < 100; i++) { const t0 = performance.now(); await get(); times.push(performance.now() - t0); }
times.sort((a, b) => a - b); console.log("p50", times[50].toFixed(1), "min", times[0].toFixed(1));
proc.kill("SIGTERM"); await new Promise((r) => setTimeout(r, 3000));
await dropDb("prof_nested");
