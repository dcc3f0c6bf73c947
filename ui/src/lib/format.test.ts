import { describe, expect, test } from "vitest";
import type { StateInfo } from "../host/types";
import {
  ago,
  badgeText,
  formatAge,
  formatCountdown,
  formatDelay,
  formatSpan,
  hasStopped,
  policyLines,
  isFailed,
  restartsText,
  revisionNote,
  roundTripText,
  severityRank,
} from "./format";

const NOW = Date.parse("2026-11-29T17:00:00.000Z");
const before = (ms: number) => new Date(NOW - ms).toISOString();

describe("badgeText speaks the exact vocabulary", () => {
  const base: Pick<StateInfo, "state" | "stage" | "attempt" | "max_attempts" | "quarantine_level" | "reason"> = {
    state: null,
    stage: null,
    attempt: null,
    max_attempts: null,
    quarantine_level: 0,
    reason: null,
  };
  const cases: [Partial<typeof base>, string][] = [
    [{ state: "connecting", stage: "initialize" }, "connecting — initialize"],
    [{ state: "connecting", stage: "spawn", reason: "probe", quarantine_level: 2 }, "connecting — spawn (probe)"],
    [{ state: "connecting" }, "connecting"],
    [{ state: "ready" }, "ready"],
    [{ state: "retrying", attempt: 1, max_attempts: 10 }, "retrying — attempt 1/10"],
    [{ state: "reconnecting", attempt: 3, max_attempts: 10 }, "reconnecting — attempt 3/10"],
    [{ state: "reconnecting", reason: "offline", attempt: 2, max_attempts: 10 }, "reconnecting — offline"],
    [{ state: "retrying", reason: "offline" }, "retrying — offline"],
    [{ state: "quarantined", quarantine_level: 2 }, "quarantined — level 2"],
    [{ state: "retired", reason: "auth" }, "retired — auth"],
    [{ state: "retired", reason: "config" }, "retired — config"],
    [{ state: "retired", reason: "sign_in" }, "retired — sign-in needed"],
    [{ state: "gave_up", quarantine_level: 3 }, "gave_up"],
    [{ state: "disabled" }, "disabled"],
    [{ state: "stopping" }, "stopping"],
    [{}, "starting"],
  ];
  test.each(cases)("%o → %s", (info, text) => {
    expect(badgeText({ ...base, ...info })).toBe(text);
  });
});

describe("countdown", () => {
  test.each([
    [27_000, "27 s"],
    [26_001, "27 s"], // rounded up: never shows a second less than is left
    [999, "1 s"],
    [0, "now"],
    [-5, "now"],
    [60_000, "1 m 00 s"],
    [65_000, "1 m 05 s"],
    [119_500, "2 m 00 s"],
    [3_720_000, "1 h 02 m"],
  ])("%d ms → %s", (ms, text) => expect(formatCountdown(ms)).toBe(text));
});

describe("restarts with recency", () => {
  test("count and age, as kubectl prints them", () => {
    expect(restartsText(5, before(3 * 60_000 + 10_000), NOW)).toBe("5 (3 m ago)");
    expect(restartsText(1, before(2 * 3600_000 + 600_000), NOW)).toBe("1 (2 h ago)");
    expect(restartsText(14, before(71 * 86_400_000), NOW)).toBe("14 (71 d ago)");
  });
  test("no restarts is a bare zero", () => {
    expect(restartsText(0, null, NOW)).toBe("0");
  });
});

describe("ages, spans and delays", () => {
  test.each([
    [0, "0 s"],
    [59_999, "59 s"],
    [60_000, "1 m"],
    [47 * 3600_000, "47 h"],
    [48 * 3600_000, "2 d"],
  ])("age %d → %s", (ms, text) => expect(formatAge(ms)).toBe(text));

  test("ago", () => {
    expect(ago(before(400), NOW)).toBe("just now");
    expect(ago(before(4_000), NOW)).toBe("4 s ago");
  });

  test.each([
    [21_000, "21 s"],
    [6 * 60_000 + 20_000, "6 min"],
    [3 * 3600_000, "3 h"],
  ])("span %d → %s", (ms, text) => expect(formatSpan(ms)).toBe(text));

  test.each([
    [512, "512 ms"],
    [45_000, "45 s"],
    [26_600, "26.6 s"],
    [120_000, "2 min"],
    [90_000, "1 m 30 s"],
  ])("delay %d → %s", (ms, text) => expect(formatDelay(ms)).toBe(text));
});

test("round trip: value and age", () => {
  expect(roundTripText(2, before(4_000), NOW)).toBe("2 ms, 4 s ago");
  expect(roundTripText(null, null, NOW)).toBe("—");
});

test("severity orders states from needs-a-person down to off", () => {
  const order = ["retired", "quarantined", "reconnecting", "connecting", "ready", "disabled"] as const;
  const ranks = order.map(severityRank);
  expect([...ranks].sort((a, b) => b - a)).toEqual(ranks);
  expect(severityRank("gave_up")).toBe(severityRank("retired"));
  expect(isFailed("quarantined")).toBe(true);
  expect(isFailed("retrying")).toBe(true);
  for (const s of ["quarantined", "gave_up", "retired"] as const) expect(hasStopped(s)).toBe(true);
  for (const s of ["retrying", "reconnecting", "connecting", "ready", "disabled", null] as const) {
    expect(hasStopped(s)).toBe(false);
  }
  expect(isFailed("connecting")).toBe(false);
  expect(isFailed("disabled")).toBe(false);
});

test("a policy reads as the curve, its budget and reset, the ladder and the timeouts", () => {
  const p = {
    reconnect: true,
    initial_delay_ms: 500,
    max_delay_ms: 30_000,
    jitter_percent: 20,
    max_attempts: 10,
    quarantine_ms: [30_000, 60_000, 120_000] as [number, number, number],
    establish_ms: 60_000,
    request_ms: 60_000,
    ping_interval_ms: 30_000,
    ping_timeout_ms: 10_000,
    max_concurrent_calls: 4,
  };
  expect(policyLines(p).map((l) => `${l.label}: ${l.text}`)).toEqual([
    "Backoff: 500 ms, doubling to 30 s (±20 % jitter; a server's Retry-After is waited exactly)",
    "Budget: 10 attempts per outage; a connection up for 30 s starts a fresh budget",
    "Quarantine: 30 s → 1 min → 2 min, one probe after each; then gave up",
    "Connect: one 1 min deadline over every stage",
    "Requests: time out after 1 min without progress; 4 calls at once",
    "Health: a ping after 30 s idle (10 s to answer)",
  ]);
  const off = policyLines({ ...p, reconnect: false, ping_interval_ms: null }).map((l) => l.text);
  expect(off[0]).toBe("off: the first failure is final (gave up)");
  expect(off).not.toContain(expect.stringMatching(/Quarantine/));
  expect(off.at(-1)).toBe("no pings");
});

describe("revisionNote speaks of the revision, not the transport", () => {
  test("a 2024-11-05 session is legacy HTTP+SSE over HTTP, and only a revision over stdio", () => {
    expect(revisionNote("2024-11-05", "sse")).toBe(" · legacy HTTP+SSE");
    expect(revisionNote("2024-11-05", "http")).toBe(" · legacy HTTP+SSE");
    expect(revisionNote("2024-11-05", "stdio")).toBe(" · oldest revision");
  });
  test("the stateless revision is named, the others need no note", () => {
    expect(revisionNote("2026-07-28", "http")).toBe(" · stateless");
    expect(revisionNote("2025-11-25", "stdio")).toBe("");
    expect(revisionNote(null, "stdio")).toBe("");
  });
});
