/** PLACEMENT_MAX_ANSWER_BYTES: its default, the environment, placement.conf's [placement] max_answer_bytes, bad values. */
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadSettings } from "../../src/config.js";

function withFile(text: string, env: Record<string, string> = {}) {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), "placement-bound-")), "placement.conf");
  writeFileSync(file, text);
  return { file, ...loadSettings({ PLACEMENT_CONFIG_FILE: file, ...env }) };
}

describe("PLACEMENT_MAX_ANSWER_BYTES", () => {
  it("defaults to 64 MiB", () => {
    const { config, sources } = loadSettings({});
    expect(config.PLACEMENT_MAX_ANSWER_BYTES).toBe(64 * 1024 * 1024);
    expect(sources.PLACEMENT_MAX_ANSWER_BYTES).toBe("default");
  });

  it("is read from [placement] max_answer_bytes, and the environment wins", () => {
    const fromFile = withFile("[placement]\nmax_answer_bytes = 1048576\n");
    expect(fromFile.config.PLACEMENT_MAX_ANSWER_BYTES).toBe(1048576);
    expect(fromFile.sources.PLACEMENT_MAX_ANSWER_BYTES).toBe(`${fromFile.file} [placement] max_answer_bytes`);
    expect(fromFile.notes).toEqual([]);
    const fromEnv = withFile("[placement]\nmax_answer_bytes = 1048576\n", { PLACEMENT_MAX_ANSWER_BYTES: "0" });
    expect(fromEnv.config.PLACEMENT_MAX_ANSWER_BYTES).toBe(0);
  });

  it("stops start-up on a value that is not a byte count", () => {
    expect(() => loadSettings({ PLACEMENT_MAX_ANSWER_BYTES: "-1" })).toThrow(/^invalid setting PLACEMENT_MAX_ANSWER_BYTES: /);
    expect(() => loadSettings({ PLACEMENT_MAX_ANSWER_BYTES: "64MiB" })).toThrow(/PLACEMENT_MAX_ANSWER_BYTES/);
    expect(() => withFile("[placement]\nmax_answer_bytes = lots\n")).toThrow(/\[placement\] max_answer_bytes/);
  });
});
