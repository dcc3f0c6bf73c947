import { describe, expect, test } from "vitest";
import { ManualClock, T0 } from "../test/fixtures";
import type { Event, ServerView } from "./types";
import { MockHost, mockOptionsFromUrl } from "./mock";
import { snapshotOf } from "./mock-replay";
import { MockTrust } from "./mock-trust";

const byName = async (m: MockHost) => Object.fromEntries((await m.snapshot()).map((v) => [v.server, v]));
const secondsUntil = (at: string | null, now: number) => (at === null ? null : (Date.parse(at) - now) / 1000);

describe("the recorded story (recorded/scenario.json, from the real core)", () => {
  test("at load: one healthy, one rate-limited, one retired (auth), one crash-looping in quarantine", async () => {
    const clock = new ManualClock(T0);
    const s = await byName(new MockHost({ clock }));
    expect(Object.keys(s)).toEqual(["filesystem", "github", "linear", "sqlite"]);

    expect(s.filesystem).toMatchObject({ state: "ready", generation: 2, restarts: 1, tools_stale: false });
    expect(s.filesystem!.tools).toContain("echo");

    // Never connected yet: retrying, not reconnecting; the second 429 asked for 45 s.
    expect(s.github).toMatchObject({ state: "retrying", attempt: 2, max_attempts: 10, tools: [] });
    expect(s.github!.cause).toMatchObject({ kind: "rate_limited", status: 429, retry_after_ms: 45_000 });
    expect(secondsUntil(s.github!.next_attempt_at, T0)).toBe(26);

    expect(s.linear).toMatchObject({ state: "retired", reason: "auth", tools: [] });
    expect(s.linear!.cause).toMatchObject({ kind: "auth", status: 401 });

    expect(s.sqlite).toMatchObject({ state: "quarantined", quarantine_level: 2, tools_stale: true });
    expect(s.sqlite!.cause).toMatchObject({
      kind: "process_exit",
      exit_code: 1,
      message: "the server process exited with exit code 1; its last stderr line: Error: SQLITE_CORRUPT: database disk image is malformed",
    });
    const probeIn = secondsUntil(s.sqlite!.next_attempt_at, T0)!;
    expect(probeIn).toBeGreaterThan(20);
    expect(probeIn).toBeLessThan(60);
  });

  test("replaying the past gives exactly the snapshots the core had at that moment", async () => {
    const views = await new MockHost({ clock: new ManualClock(T0) }).snapshot();
    for (const v of views) {
      const recorded = snapshotOf(v.server)!;
      const next = recorded.next_attempt_at === null ? null : new Date(T0 + recorded.next_attempt_at).toISOString();
      const { transport: _t, restarts: _r, last_restart_at: _l, ...snapshot } = v;
      // With the tool review's story laid over (mock-trust.ts): held tools out, its counts.
      const expected = { ...recorded, next_attempt_at: next } as unknown as ServerView;
      new MockTrust().overlay(expected);
      expect(snapshot, v.server).toEqual(expected);
    }
  });

  test("the first reconnect after a crash is spread, then the backoff grows", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const waits = m
      .events()
      .filter((e): e is Extract<Event, { type: "state" }> => e.server === "sqlite" && e.type === "state")
      .filter((e) => e.state === "reconnecting")
      .map((e) => [e.attempt, e.delay_ms]);
    // The crash of an established connection: no attempt counted yet, a spread first wait.
    expect(waits[0]![0]).toBeNull();
    expect(waits[0]![1]).toBeGreaterThan(0);
    expect(waits.slice(1).map(([a]) => a)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  test("the same page load tells the same story", async () => {
    const a = await new MockHost({ clock: new ManualClock(T0) }).snapshot();
    const b = await new MockHost({ clock: new ManualClock(T0) }).snapshot();
    expect(a).toEqual(b);
  });

  test("time moves the story on: github recovers; sqlite climbs to level 3, then gives up", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    clock.advance(30_000);
    let s = await byName(m);
    expect(s.github).toMatchObject({ state: "ready", tools_stale: false, generation: 3 });
    expect(s.github!.tools).toHaveLength(10);

    clock.advance(30_000);
    s = await byName(m);
    expect(s.sqlite).toMatchObject({ state: "quarantined", quarantine_level: 3 });

    clock.advance(125_000);
    s = await byName(m);
    expect(s.sqlite).toMatchObject({ state: "gave_up", tools: [] });
  });

  test("a subscriber gets the whole log first, gap-free from seq 1, then live events", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    const seen: Event[] = [];
    await m.subscribe((e) => seen.push(e));
    const replayed = seen.length;
    expect(replayed).toBeGreaterThan(50);
    clock.advance(30_000);
    expect(seen.length).toBeGreaterThan(replayed);
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(new Set(seen.map((e) => e.v))).toEqual(new Set([1]));
    const times = seen.map((e) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });
});

describe("commands replay what the core did with them", () => {
  test("reconnect on a quarantined server probes at once, fails, and climbs a level", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    await m.reconnect("sqlite");
    const probe = m.events().find((e) => e.server === "sqlite" && e.type === "state" && e.generation === 13);
    expect(probe).toMatchObject({ state: "connecting", reason: "probe" });
    expect((await byName(m)).sqlite).toMatchObject({ state: "quarantined", quarantine_level: 3, generation: 13 });
    expect(m.calls).toEqual([{ command: "reconnect", server: "sqlite" }]);
  });

  test("reset clears the ladder; disable and enable", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    await m.reset("sqlite");
    expect((await byName(m)).sqlite).toMatchObject({ state: "retrying", attempt: 1, quarantine_level: 0 });

    await m.disable("filesystem");
    expect((await byName(m)).filesystem).toMatchObject({ state: "disabled", tools: [] });
    await m.enable("filesystem");
    clock.advance(1_000);
    expect((await byName(m)).filesystem).toMatchObject({ state: "ready", generation: 3 });
  });

  test("reconnect all failed names the servers that stopped trying, as the core does", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    // github is retrying on its own: not one of them.
    expect(await m.reconnectAllFailed()).toEqual(["linear", "sqlite"]);
  });

  test("?mock&fail=… makes a command reject with {kind, message}", async () => {
    const m = new MockHost({ clock: new ManualClock(T0), ...mockOptionsFromUrl(new URL("http://x/?mock&fail=reset")) });
    await expect(m.reset("sqlite")).rejects.toMatchObject({ kind: "supervisor_stopped" });
    await expect(m.reconnect("nope")).rejects.toMatchObject({ kind: "unknown_server" });
  });

  test("a call on a server that is not ready fails at once", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    await expect(m.callTool("linear", "echo", {})).rejects.toMatchObject({ kind: "not_ready" });
    await expect(m.callTool("filesystem", "echo", { text: "hi" })).resolves.toMatchObject({
      isError: false,
      content: [{ type: "text", text: "hi" }],
    });
  });
});

test("appInfo: a plain config-mode app by default; ?mock&notice=demo adds the demo notice", async () => {
  const plain = new MockHost({ clock: new ManualClock(T0) });
  expect(await plain.appInfo()).toEqual({ version: "0.1.0", mode: "config", config_path: null, log_dir: null, notices: [] });
  expect(plain.calls).toEqual([]);

  const opts = mockOptionsFromUrl(new URL("http://x/?mock&notice=demo,fixture_missing"));
  expect(opts.notices).toEqual(["demo", "fixture_missing"]);
  const info = await new MockHost({ clock: new ManualClock(T0), ...opts }).appInfo();
  expect(info.mode).toBe("demo");
  expect(info.config_path).toMatch(/config\.json$/);
  expect(info.notices.map((n) => n.kind)).toEqual(["demo", "fixture_missing"]);
  expect(info.notices[1]!.message).toContain("lifeline-fixture");
});

test("?mock&servers=100 adds generated servers, replaying the recorded archetypes", async () => {
  const opts = mockOptionsFromUrl(new URL("http://x/?mock&servers=100"));
  const views = await new MockHost({ clock: new ManualClock(T0), ...opts }).snapshot();
  expect(views).toHaveLength(100);
  expect(new Set(views.map((v) => v.server)).size).toBe(100);
  // Every seventh replays the server nobody listens for; the others the healthy one.
  views.slice(4).forEach((v: ServerView, k) => expect(v.state === "ready", v.server).toBe((k + 4) % 7 !== 3));
});

describe("the detail panel's commands", () => {
  test("tool definitions are the recorded ones of the tools the server has now", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const defs = await m.toolList("filesystem");
    expect(defs.map((d) => d.name)).toEqual((await byName(m)).filesystem!.tools);
    const echo = defs.find((d) => d.name === "echo")!;
    expect(echo.inputSchema).toMatchObject({ type: "object", properties: { text: { type: "string" } } });
    expect(await m.toolList("linear")).toEqual([]);
  });

  test("progress reports on the clock; cancel_call ends it as cancelled", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    const seen: string[] = [];
    const onProgress = (p: { progress: number; total: number | null }) => seen.push(`${p.progress}/${p.total}`);
    const args = { steps: 5, interval_ms: 400 };
    const done = m.callTool("filesystem", "progress", args, { callId: "c1", onProgress });
    clock.advance(2_000);
    await expect(done).resolves.toMatchObject({ isError: false });
    expect(seen).toEqual(["1/5", "2/5", "3/5", "4/5", "5/5"]);

    const slow = m.callTool("filesystem", "progress", args, { callId: "c2", onProgress });
    clock.advance(400);
    await expect(m.callTool("filesystem", "echo", {}, { callId: "c2" })).rejects.toMatchObject({ kind: "call_id_in_use" });
    expect(await m.cancelCall("c2")).toBe(true);
    await expect(slow).rejects.toMatchObject({ kind: "cancelled" });
    expect(await m.cancelCall("c2")).toBe(false);
    const last = m.events().at(-1)!;
    expect(last).toMatchObject({ type: "call", tool: "progress", outcome: "error", error: { kind: "cancelled" } });
  });

  test("a tool error is a result, not a rejection", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    await expect(m.callTool("filesystem", "fail", {})).resolves.toMatchObject({ isError: true });
  });

  test("stderr (recorded), command and config: two generations for a restarted stdio server, nothing for http", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const stderr = await m.serverStderr("filesystem");
    expect(stderr.map((g) => g.generation)).toEqual([1, 2]);
    expect(stderr[1]!.lines).toEqual(["Secure MCP Filesystem Server running on stdio"]);
    expect((await m.serverStderr("sqlite")).at(-1)!.lines).toEqual([
      "Error: SQLITE_CORRUPT: database disk image is malformed",
    ]);
    expect(await m.serverStderr("github")).toEqual([]);
    expect((await m.serverCommand("filesystem"))!.program).toMatch(/^\//);
    expect((await m.serverCommand("sqlite"))!.problem).toContain("not found in PATH");
    expect(await m.serverCommand("github")).toBeNull();
    const config = await m.serverConfig("github");
    expect(config).toMatchObject({ type: "http", headers: { Authorization: "***" } });
    expect(JSON.stringify(await m.serverConfig("filesystem"))).not.toMatch(/"env":\{[^}]*"[^*]+"\}/);
  });
});
