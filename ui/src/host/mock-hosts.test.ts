// The mock's Hosts section: derived from the recorded host events (the recording's Claude
// Desktop on filesystem), with the core's window and percentile rules.

import { describe, expect, test } from "vitest";
import { hostAttachedEvent, iso, ManualClock, T0 } from "../test/fixtures";
import { MockHost } from "./mock";
import { hostsView, percentile } from "./mock-hosts";
import type { Event } from "./types";

const MIN = 60_000;

function call(seq: number, tool: string, duration_ms: number, at: number, outcome: "ok" | "tool_error" = "ok"): Event {
  return {
    v: 1,
    seq,
    at: iso(at),
    server: "fs",
    generation: 1,
    type: "host_call",
    host_id: 1,
    host: "Claude Desktop",
    tool,
    outcome,
    duration_ms,
    error_kind: null,
  };
}

describe("the recorded host (tests/tests/it/recording.rs)", () => {
  test("at load, filesystem has Claude Desktop attached and the hour's calls by tool", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const v = await m.serverHosts("filesystem");
    expect(v.hosts).toEqual([
      {
        id: 1,
        name: "Claude Desktop",
        version: "1.2.0",
        protocol_version: "2025-06-18",
        mode: "app",
        attached_at: iso(T0 - 47 * MIN),
        live_calls: 0,
      },
    ]);
    expect(v.live_calls).toBe(0);
    expect(v.tools).toEqual([
      { tool: "echo", calls: 3, errors: 0, p50_ms: 5, p95_ms: 6 },
      { tool: "add", calls: 2, errors: 0, p50_ms: 2, p95_ms: 3 },
      { tool: "fail", calls: 1, errors: 1, p50_ms: 41, p95_ms: 41 },
    ]);
    expect(await m.serverHosts("sqlite")).toEqual({ hosts: [], live_calls: 0, tools: [] });
  });

  test("the host's calls are in the activity feed's events", () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const calls = m.events().filter((e) => e.type === "host_call");
    expect(calls.map((e) => (e.type === "host_call" ? [e.server, e.host, e.tool, e.outcome] : []))).toEqual([
      ["filesystem", "Claude Desktop", "echo", "ok"],
      ["filesystem", "Claude Desktop", "add", "ok"],
      ["filesystem", "Claude Desktop", "echo", "ok"],
      ["filesystem", "Claude Desktop", "fail", "tool_error"],
      ["filesystem", "Claude Desktop", "echo", "ok"],
      ["filesystem", "Claude Desktop", "add", "ok"],
    ]);
  });

  test("as the clock moves, calls older than the hour leave the statistics; the host stays", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    clock.advance(14 * MIN);
    const v = await m.serverHosts("filesystem");
    expect(v.hosts.map((h) => h.name)).toEqual(["Claude Desktop"]);
    // The first echo (46 min 40 s before the load) is out; the rest are in.
    expect(v.tools.find((t) => t.tool === "echo")).toMatchObject({ calls: 2, p50_ms: 5, p95_ms: 6 });
  });
});

describe("hostsView", () => {
  test("a detached host is gone; counts, errors and nearest-rank percentiles per tool", () => {
    const attached = hostAttachedEvent(1, "fs", "Claude Desktop", T0 - 10 * MIN);
    const detached: Event = { ...attached, seq: 9, type: "host_detached" } as Event;
    const calls = [10, 20, 30, 40].map((ms, i) => call(2 + i, "read", ms, T0 - MIN, i === 3 ? "tool_error" : "ok"));
    const older = call(7, "read", 1000, T0 - 60 * MIN);
    const other = { ...call(8, "read", 5, T0), server: "other" };
    const before = hostsView([attached, ...calls, older, other], "fs", T0);
    expect(before.hosts.map((h) => [h.name, h.attached_at])).toEqual([["Claude Desktop", iso(T0 - 10 * MIN)]]);
    expect(before.tools).toEqual([{ tool: "read", calls: 4, errors: 1, p50_ms: 20, p95_ms: 40 }]);
    expect(hostsView([attached, ...calls, detached], "fs", T0).hosts).toEqual([]);
  });

  test("the most called tool first, then by name", () => {
    const events = [call(1, "b", 1, T0), call(2, "a", 1, T0), call(3, "c", 1, T0), call(4, "c", 1, T0)];
    expect(hostsView(events, "fs", T0).tools.map((t) => t.tool)).toEqual(["c", "a", "b"]);
  });

  test("percentile is the nearest rank, as stats.rs", () => {
    expect(percentile([], 50)).toBeNull();
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([1, 2, 3, 4], 95)).toBe(4);
  });
});
