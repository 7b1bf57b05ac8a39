/**
 * The real upstream Placement 8.0.0 (test/support/reference-placement.ts) on
 * a fresh database of its own, on the local PostgreSQL or MariaDB, for the
 * import tests.
 */
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import pg from "pg";
import { pythonModulesUnavailable } from "../support/debian.js";
import { adminStatement, startReferencePlacement } from "../support/reference-placement.js";

export { referenceUnavailable } from "../support/reference-placement.js";

export const MARIADB_ADMIN_URL = process.env.PLACEMENT_TEST_MARIADB_URL ?? "mysql://root@127.0.0.1:3306";

export interface Reference {
  baseUrl: string;
  /** The upstream database, as placement.conf would name it (SQLAlchemy form). */
  databaseUrl: string;
  stop(): Promise<void>;
}

/** Why MariaDB cannot be used, or undefined; installs the Python driver upstream needs when it can. */
export async function mariadbUnavailable(): Promise<string | undefined> {
  const driver = pythonModulesUnavailable("pymysql", "python3-pymysql", "upstream's MySQL driver");
  if (driver) return driver;
  try {
    const c = await mysql.createConnection(MARIADB_ADMIN_URL);
    await c.end();
    return undefined;
  } catch (err) {
    return `no MariaDB at ${MARIADB_ADMIN_URL} (${(err as Error).message}); set PLACEMENT_TEST_MARIADB_URL`;
  }
}

export async function startReference(kind: "postgresql" | "mariadb", postgresAdminUrl: string): Promise<Reference> {
  const name = `upstream_${randomBytes(5).toString("hex")}`;
  let databaseUrl: string;
  let drop: () => Promise<void>;
  if (kind === "postgresql") {
    await adminStatement(postgresAdminUrl, `CREATE DATABASE ${name}`);
    const u = new URL(postgresAdminUrl);
    u.pathname = `/${name}`;
    databaseUrl = u.toString().replace(/^postgres(ql)?:/, "postgresql+psycopg2:");
    drop = () => adminStatement(postgresAdminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } else {
    const admin = await mysql.createConnection(MARIADB_ADMIN_URL);
    await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4`);
    await admin.end();
    databaseUrl = `${MARIADB_ADMIN_URL.replace(/^mysql:/, "mysql+pymysql:").replace(/\/$/, "")}/${name}?charset=utf8`;
    drop = async () => {
      const c = await mysql.createConnection(MARIADB_ADMIN_URL);
      await c.query(`DROP DATABASE IF EXISTS ${name}`);
      await c.end();
    };
  }
  try {
    const server = await startReferencePlacement({ databaseUrl, readyTimeoutMs: 90_000 });
    return {
      baseUrl: server.baseUrl,
      databaseUrl,
      stop: async () => {
        await server.stop();
        await drop();
      },
    };
  } catch (err) {
    await drop();
    throw err;
  }
}

/** Runs one statement on the upstream database behind the reference's back (to break a row on purpose). */
export async function sourceSql(kind: "postgresql" | "mariadb", databaseUrl: string, sql: string): Promise<void> {
  const url = databaseUrl.replace(/^(postgresql|mysql)\+\w+:/, "$1:").replace(/\?.*$/, "");
  if (kind === "postgresql") {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(sql).finally(() => client.end());
  } else {
    const c = await mysql.createConnection(url);
    await c.query(sql).finally(() => c.end());
  }
}
