/**
 * Where a benchmark's CPU went, read from Linux's /proc: the CPU time of a
 * process tree (the server: its primary and workers), of every PostgreSQL
 * process on the machine, and how busy the machine's cores were, between two
 * readings. The benches run the server, PostgreSQL and their own clients on
 * one machine, so these say which of them a figure is bound by. Undefined
 * where /proc cannot be read (not Linux).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

export interface CpuReading {
  /** CPU seconds (user + system) of each process of the tree, by pid. */
  tree: Map<number, number>;
  /** CPU seconds of each PostgreSQL process, by pid. */
  postgres: Map<number, number>;
  /** The machine's busy and total CPU seconds since boot, over all cores. */
  busy: number;
  total: number;
}

export interface CpuSplit {
  /** CPU seconds in the window. */
  tree: number;
  postgres: number;
  /** CPU seconds of the whole machine, whoever used them, and that as a share of its cores (0..1). */
  busy: number;
  machineBusy: number;
}

/** Clock ticks per second of /proc's times (USER_HZ). */
const TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a process, in seconds; undefined once it is gone. */
function processSeconds(pid: number): { name: string; seconds: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The name is in parentheses and may hold spaces; the fields after it are space-separated.
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    return { name: stat.slice(stat.indexOf("(") + 1, close), seconds: (Number(fields[11]) + Number(fields[12])) / TICKS };
  } catch {
    return undefined;
  }
}

function descendants(pid: number): number[] {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  return children.flatMap((c) => [c, ...descendants(c)]);
}

/** A reading of the tree under `root` and of PostgreSQL's processes; undefined without /proc. */
export function readCpu(root: number): CpuReading | undefined {
  let stat: string;
  try {
    stat = readFileSync("/proc/stat", "utf8");
  } catch {
    return undefined;
  }
  // cpu user nice system idle iowait irq softirq steal ...: idle and iowait are the idle time.
  const jiffies = stat.split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const total = jiffies.reduce((a, b) => a + b, 0) / TICKS;
  const idle = (jiffies[3] + (jiffies[4] ?? 0)) / TICKS;
  const tree = new Map<number, number>();
  for (const pid of [root, ...descendants(root)]) {
    const p = processSeconds(pid);
    if (p) tree.set(pid, p.seconds);
  }
  const postgres = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const p = processSeconds(Number(entry));
    if (p?.name.startsWith("postgres")) postgres.set(Number(entry), p.seconds);
  }
  return { tree, postgres, busy: total - idle, total };
}

/**
 * What each used between two readings. A process that started in between
 * counts from zero; one that ended in between counts only up to the first
 * reading (its last seconds are lost, so the figures are a floor).
 */
export function cpuBetween(before: CpuReading | undefined, after: CpuReading | undefined): CpuSplit | undefined {
  if (!before || !after) return undefined;
  const used = (a: Map<number, number>, b: Map<number, number>) => [...b].reduce((sum, [pid, s]) => sum + s - (a.get(pid) ?? 0), 0);
  const window = after.total - before.total;
  return {
    tree: used(before.tree, after.tree),
    postgres: used(before.postgres, after.postgres),
    busy: after.busy - before.busy,
    machineBusy: window > 0 ? (after.busy - before.busy) / window : 0,
  };
}
