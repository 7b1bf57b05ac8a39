/**
 * Chooses the PostgreSQL the tests run against, once per run:
 *   1. DATABASE_URL when set (CI: the machine's PostgreSQL),
 *   2. otherwise a testcontainers PostgreSQL when a container engine answers,
 *   3. otherwise a throwaway embedded PostgreSQL (the one `npm start` uses).
 * It migrates a template database; each test file clones it (test/support/database.ts).
 */
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { runMigrations } from "../../src/db/migrate.js";
import { startEmbeddedPostgres } from "../../src/db/embedded.js";
import { createLogger } from "../../src/log.js";
import { freePort } from "../../src/net.js";

declare module "vitest" {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
    templateDatabase: string;
  }
}

const log = createLogger("warn");


async function containerDatabase(): Promise<{ url: string; stop: () => Promise<void> } | undefined> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
  } catch {
    return undefined;
  }
  const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
  const container = await new PostgreSqlContainer("postgres:17-alpine").start();
  return { url: container.getConnectionUri(), stop: async () => void (await container.stop()) };
}

async function embeddedDatabase(): Promise<{ url: string; stop: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "placement-test-"));
  const embedded = await startEmbeddedPostgres(dir, await freePort(), log);
  return {
    url: embedded.url,
    stop: async () => {
      await embedded.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Tests that start whole server processes run dist/: compile it first so they
 * never run stale code. Type errors do not stop emission; `npm run typecheck` reports them.
 */
function buildDist(): void {
  try {
    execFileSync(process.execPath, [path.resolve("node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"], { stdio: "ignore" });
  } catch {
    // emitted anyway; see above
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  buildDist();
  const server = process.env.DATABASE_URL
    ? { url: process.env.DATABASE_URL, stop: async () => undefined }
    : ((await containerDatabase()) ?? (await embeddedDatabase()));

  const template = `placement_test_template_${process.pid}`;
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${template}`);
  await admin.query(`CREATE DATABASE ${template}`);
  const templateUrl = new URL(server.url);
  templateUrl.pathname = `/${template}`;
  const pool = new pg.Pool({ connectionString: templateUrl.toString(), max: 1 });
  await runMigrations(pool);
  await pool.end();

  project.provide("adminDatabaseUrl", server.url);
  project.provide("templateDatabase", template);

  return async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
    await server.stop();
  };
}
