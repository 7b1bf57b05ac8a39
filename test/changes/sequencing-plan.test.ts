/**
 * The feed's sequencing at commit (drizzle/0017) finds the committing
 * transaction's rows by index, whatever the feed's statistics and however
 * long it has grown since the session first planned it: it runs under the
 * lock every commit waits for, so a scan of the feed there would be paid by
 * every write, more with every commit.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "../support/harness.js";

let t: Harness;
let session: pg.Client;
beforeAll(async () => {
  t = await startHarness();
  session = new pg.Client({ connectionString: t.url });
  await session.connect();
});
afterAll(async () => {
  await session?.end();
  await t?.close();
});

/** What `session` has read of the feed so far (its counters not yet flushed to the statistics, so they span its transactions). */
async function feedReads(): Promise<{ seqScans: number; rowsRead: number }> {
  const res = await session.query<{ seq_scan: string; seq_tup_read: string }>(
    "SELECT seq_scan, seq_tup_read FROM pg_stat_xact_user_tables WHERE relname = 'provider_changes'",
  );
  return { seqScans: Number(res.rows[0]?.seq_scan ?? 0), rowsRead: Number(res.rows[0]?.seq_tup_read ?? 0) };
}

/** In `session`: bumps the provider's generation and runs the commit's sequencing now; what that read of the feed. */
async function sequencedWrite(uuid: string, commit: boolean): Promise<{ seqScans: number; rowsRead: number; sequenced: boolean }> {
  await session.query("BEGIN");
  try {
    const before = await feedReads();
    await session.query("UPDATE resource_providers SET generation = generation + 1 WHERE uuid = $1", [uuid]);
    // The sequencing is a deferred trigger: made immediate, it runs here.
    await session.query("SET CONSTRAINTS ALL IMMEDIATE");
    const after = await feedReads();
    const mine = await session.query<{ seq: string | null }>("SELECT seq FROM provider_changes WHERE txid = pg_current_xact_id()::text::bigint");
    return {
      seqScans: after.seqScans - before.seqScans,
      rowsRead: after.rowsRead - before.rowsRead,
      sequenced: mine.rows.length === 1 && mine.rows[0].seq !== null,
    };
  } finally {
    await session.query(commit ? "COMMIT" : "ROLLBACK");
  }
}

describe("the feed's sequencing at commit", () => {
  it("finds the transaction's rows by index after the feed has grown past the statistics its plan was made on", async () => {
    const res = await t.request("POST", "/resource_providers", { body: { name: "sequenced" } });
    expect(res.status, res.text).toBe(200);
    const uuid: string = res.body.uuid;
    // Statistics of a small feed, and the session's first commit plans the sequencing on them.
    await t.sql("ANALYZE provider_changes");
    expect(await sequencedWrite(uuid, true)).toMatchObject({ seqScans: 0, sequenced: true });

    // The feed grows as other commits would make it grow (rows of transactions long gone, left unsequenced so no reader sees them).
    await t.sql(
      `INSERT INTO provider_changes (txid, resource_provider_id, resource_provider_uuid)
       SELECT -g, rp.id, rp.uuid FROM resource_providers rp, generate_series(1, 20000) g WHERE rp.uuid = $1`,
      [uuid],
    );
    expect(await sequencedWrite(uuid, false)).toEqual({ seqScans: 0, rowsRead: 0, sequenced: true });
  });
});
