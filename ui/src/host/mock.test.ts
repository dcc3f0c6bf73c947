import { describe, expect, test } from "vitest";
import { ManualClock, T0 } from "../test/fixtures";
import type { Event } from "./types";
import { MockHost, mockOptionsFromUrl } from "./mock";
import { exitMessage } from "./mock-scenario";

const byName = async (m: MockHost) => Object.fromEntries((await m.snapshot()).map((v) => [v.server, v]));
const secondsUntil = (at: string | null, now: number) => (at === null ? null : (Date.parse(at) - now) / 1000);

describe("the scripted scenario", () => {
  test("at load: one healthy, one rate-limited, one retired (auth), one crash-looping in quarantine", async () => {
    const clock = new ManualClock(T0);
    const s = await byName(new MockHost({ clock }));
    expect(Object.keys(s)).toEqual(["filesystem", "github", "linear", "sqlite"]);

    expect(s.filesystem).toMatchObject({ state: "ready", generation: 2, restarts: 1, tools_stale: false });
    expect(s.filesystem!.tools).toHaveLength(11);

    expect(s.github).toMatchObject({ state: "reconnecting", attempt: 3, max_attempts: 10, tools_stale: true });
    expect(s.github!.cause).toMatchObject({ kind: "rate_limited", status: 429, retry_after_ms: 45_000 });
    expect(secondsUntil(s.github!.next_attempt_at, T0)).toBeCloseTo(27, 0);

    expect(s.linear).toMatchObject({ state: "retired", reason: "auth", tools: [] });
    expect(s.linear!.cause).toMatchObject({ kind: "auth", status: 401 });

    expect(s.sqlite).toMatchObject({ state: "quarantined", quarantine_level: 2, tools_stale: true });
    expect(s.sqlite!.cause).toMatchObject({ kind: "process_exit", exit_code: 1 });
    const probeIn = secondsUntil(s.sqlite!.next_attempt_at, T0)!;
    expect(probeIn).toBeGreaterThan(20);
    expect(probeIn).toBeLessThan(60);
  });

  test("the same seed tells the same story", async () => {
    const a = await new MockHost({ clock: new ManualClock(T0) }).snapshot();
    const b = await new MockHost({ clock: new ManualClock(T0) }).snapshot();
    expect(a).toEqual(b);
  });

  test("time moves the story on: github recovers; sqlite climbs to level 3, then gives up", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    clock.advance(30_000);
    let s = await byName(m);
    expect(s.github).toMatchObject({ state: "ready", tools_stale: false });
    expect(s.github!.tools).toHaveLength(24);

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
  });
});

describe("commands", () => {
  test("reconnect on a quarantined server probes at once, and is recorded", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    await m.reconnect("sqlite");
    let s = await byName(m);
    expect(s.sqlite).toMatchObject({ state: "connecting", reason: "probe", generation: 12 });
    clock.advance(1_000);
    s = await byName(m);
    expect(s.sqlite).toMatchObject({ state: "quarantined", quarantine_level: 3 });
    expect(m.calls).toEqual([{ command: "reconnect", server: "sqlite" }]);
  });

  test("reset clears the ladder; disable and enable", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    await m.reset("sqlite");
    clock.advance(400); // the attempt fails at 350 ms: a fresh budget, off the ladder
    expect((await byName(m)).sqlite).toMatchObject({ state: "reconnecting", attempt: 1, quarantine_level: 0 });

    await m.disable("filesystem");
    clock.advance(1_000);
    expect((await byName(m)).filesystem).toMatchObject({ state: "disabled", tools: [] });
    await m.enable("filesystem");
    clock.advance(1_000);
    expect((await byName(m)).filesystem).toMatchObject({ state: "ready", generation: 3 });
  });

  test("reconnect all failed names the servers that stopped trying, as the core does", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    // github is reconnecting on its own: not one of them.
    expect(await m.reconnectAllFailed()).toEqual(["linear", "sqlite"]);
  });

  test("?mock&fail=… makes a command reject with {kind, message}", async () => {
    const m = new MockHost({ clock: new ManualClock(T0), ...mockOptionsFromUrl(new URL("http://x/?mock&fail=reset")) });
    await expect(m.reset("sqlite")).rejects.toMatchObject({ kind: "supervisor_stopped" });
    await expect(m.reconnect("nope")).rejects.toMatchObject({ kind: "unknown_server" });
  });

  test("a call on a server that is not ready fails at once", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    await expect(m.callTool("linear", "list_issues", {})).rejects.toMatchObject({ kind: "not_ready" });
    await expect(m.callTool("filesystem", "read_file", { path: "/" })).resolves.toMatchObject({ isError: false });
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

test("?mock&servers=100 adds generated servers", async () => {
  const opts = mockOptionsFromUrl(new URL("http://x/?mock&servers=100"));
  const views = await new MockHost({ clock: new ManualClock(T0), ...opts }).snapshot();
  expect(views).toHaveLength(100);
  expect(new Set(views.map((v) => v.server)).size).toBe(100);
});

describe("the detail panel's commands", () => {
  test("tool definitions follow the tool names, with schemas a form or raw JSON can fill", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const defs = await m.toolList("filesystem");
    expect(defs.map((d) => d.name)).toEqual((await byName(m)).filesystem!.tools);
    const read = defs.find((d) => d.name === "read_file")!;
    expect(read.inputSchema).toMatchObject({ type: "object", required: ["path"] });
    expect(await m.toolList("linear")).toEqual([]);
  });

  test("search_files reports progress on the clock; cancel_call ends it as cancelled", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    const seen: string[] = [];
    const onProgress = (p: { progress: number; total: number | null }) => seen.push(`${p.progress}/${p.total}`);
    const done = m.callTool("filesystem", "search_files", { path: "/p", pattern: "*.rs" }, { callId: "c1", onProgress });
    clock.advance(2_000);
    await expect(done).resolves.toMatchObject({ isError: false });
    expect(seen).toEqual(["1/5", "2/5", "3/5", "4/5", "5/5"]);

    const slow = m.callTool("filesystem", "search_files", { path: "/p", pattern: "*" }, { callId: "c2", onProgress });
    clock.advance(400);
    await expect(m.callTool("filesystem", "echo", {}, { callId: "c2" })).rejects.toMatchObject({ kind: "call_id_in_use" });
    expect(await m.cancelCall("c2")).toBe(true);
    await expect(slow).rejects.toMatchObject({ kind: "cancelled" });
    expect(await m.cancelCall("c2")).toBe(false);
    const last = m.events().at(-1)!;
    expect(last).toMatchObject({ type: "call", tool: "search_files", outcome: "error", error: { kind: "cancelled" } });
  });

  test("a tool error is a result, not a rejection", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    await expect(m.callTool("filesystem", "read_file", { path: "/etc/shadow" })).resolves.toMatchObject({ isError: true });
  });

  test("stderr, command and config: two generations for a restarted stdio server, nothing for http", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const stderr = await m.serverStderr("filesystem");
    expect(stderr.map((g) => g.generation)).toEqual([1, 2]);
    expect(await m.serverStderr("github")).toEqual([]);
    expect((await m.serverCommand("filesystem"))!.program).toMatch(/^\//);
    expect((await m.serverCommand("sqlite"))!.problem).toContain("not found in PATH");
    expect(await m.serverCommand("github")).toBeNull();
    const config = await m.serverConfig("github");
    expect(config).toMatchObject({ type: "http", headers: { Authorization: "***" } });
    expect(JSON.stringify(await m.serverConfig("filesystem"))).not.toMatch(/"env":\{[^}]*"[^*]+"\}/);
  });
});

describe("the mock words an exit as the core does (crates/core/src/transport/stdio.rs)", () => {
  test.each([
    [{ code: 127 }, undefined, "the server process exited with exit code 127 — command not found"],
    [{ signal: 9 }, undefined, "the server process exited with signal 9 — killed (often: out of memory)"],
    [{ code: 1 }, "Error: boom", "the server process exited with exit code 1; its last stderr line: Error: boom"],
  ] as const)("%o → %s", (exit, last, text) => expect(exitMessage(exit, last)).toBe(text));
});
