/** How far behind a standby is, from the primary's WAL positions over time (src/db/read-replicas.ts), without a database. */
import { describe, expect, it } from "vitest";
import { behindAtReading, parseLsn, PrimaryWalHistory, type StandbyReading } from "../../src/db/read-replicas.js";

const reading = (at: number, replayLsn: string | null, replayAgeSeconds: number | null): StandbyReading => ({
  at,
  inRecovery: true,
  system: "7000000000000000001",
  replayLsn: replayLsn === null ? null : parseLsn(replayLsn),
  replayAgeSeconds,
  replayPaused: false,
});

describe("standby lag", () => {
  it("reads LSNs as byte positions", () => {
    expect(parseLsn("0/0")).toBe(0n);
    expect(parseLsn("1/0") - parseLsn("0/FFFFFFFF")).toBe(1n);
    expect(parseLsn("16/B374D848")).toBe(0x16b374d848n);
  });

  it("calls a standby that replayed all of an idle primary's WAL caught up, however old its last commit", () => {
    const primary = new PrimaryWalHistory();
    for (let t = 0; t <= 60_000; t += 1000) primary.add(t, parseLsn("0/3000060"));
    // The last commit replayed is an hour old: pg_last_xact_replay_timestamp() alone would say one hour behind.
    expect(behindAtReading(reading(60_010, "0/3000060", 3600), primary)).toBeCloseTo(0.01, 5);
  });

  it("counts a standby behind from the primary's last position it had replayed", () => {
    const primary = new PrimaryWalHistory();
    primary.add(0, parseLsn("0/100"));
    primary.add(1000, parseLsn("0/100"));
    primary.add(2000, parseLsn("0/200")); // a write between 1 s and 2 s
    primary.add(3000, parseLsn("0/300"));
    // Replay paused at 0/100: it has everything the primary had at 1 s, not at 2 s.
    expect(behindAtReading(reading(5000, "0/100", 600), primary)).toBe(4);
    // Partly replayed: everything of 2 s.
    expect(behindAtReading(reading(5000, "0/250", 600), primary)).toBe(3);
  });

  it("falls back on the age of the last replayed commit when no sample is old enough, and knows nothing without either", () => {
    const primary = new PrimaryWalHistory();
    primary.add(1000, parseLsn("0/500"));
    expect(behindAtReading(reading(1000, "0/400", 2.5), primary)).toBe(2.5);
    expect(behindAtReading(reading(1000, "0/400", null), primary)).toBeUndefined();
    expect(behindAtReading(reading(1000, null, null), primary)).toBeUndefined();
    // With no primary sample at all (unreachable since start), the commit age is all there is.
    expect(behindAtReading(reading(1000, "0/400", 7), new PrimaryWalHistory())).toBe(7);
  });

  it("takes the smaller of the two bounds", () => {
    const primary = new PrimaryWalHistory();
    primary.add(0, parseLsn("0/100"));
    primary.add(10_000, parseLsn("0/200"));
    expect(behindAtReading(reading(10_000, "0/100", 3), primary)).toBe(3);
    expect(behindAtReading(reading(10_000, "0/100", 30), primary)).toBe(10);
  });
});
