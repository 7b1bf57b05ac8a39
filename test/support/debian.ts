/** Debian packages a test needs and may install itself (CI's machine runs as root with Debian's archive). */
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import path from "node:path";

/**
 * `apt-get install` of `packages`, waiting for any other test file doing the
 * same (dpkg takes one install at a time, and vitest runs files in parallel).
 * Best effort: the caller checks afterwards for what it needs.
 */
export function installDebianPackages(packages: readonly string[]): void {
  const lock = path.join(tmpdir(), "placement-tests-apt.lock");
  spawnSync("flock", [lock, "apt-get", "install", "-y", "-q", ...packages], {
    stdio: "ignore",
    timeout: 600_000,
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
}

/** Undefined when `python3 -c "import <modules>"` works (installing `pkg` first if it does not); else why not. */
export function pythonModulesUnavailable(modules: string, pkg: string, what: string): string | undefined {
  const check = () => spawnSync("/usr/bin/python3", ["-c", `import ${modules}`]).status === 0;
  if (check()) return undefined;
  installDebianPackages([pkg]);
  return check() ? undefined : `${pkg} (${what}) cannot be installed`;
}
