import { render, screen, within } from "@testing-library/svelte";
import { tick } from "svelte";
import { describe, expect, test } from "vitest";
import ActivityFeed from "../components/ActivityFeed.svelte";
import PastRuns from "../components/PastRuns.svelte";
import { MockHost, mockAppInfo } from "../host/mock";
import { noticeBanners } from "./notices";
import type { Event, PastCall, PastEvent, PastFailure } from "../host/types";
import { FakeHost } from "../test/fake-host";
import { failure, failureEvent, iso, ManualClock, stateEvent, T0, view } from "../test/fixtures";
import { HistoryStore, pastRuns, runStartText } from "./history.svelte";
import { DashboardStore } from "./store.svelte";

const RUN_START = iso(T0 - 86_400_000);

/** History rows of `run`, newest first as the shell returns them, ids from `firstId` up. */
function rows(run: number, events: Event[], firstId = 1): PastEvent[] {
  return events
    .map((event, i) => ({ id: firstId + i, run, run_started_at: RUN_START, event }))
    .reverse();
}

const settled = async () => {
  for (let i = 0; i < 5; i++) await tick();
};

describe("earlier runs are shown, never applied", () => {
  test("a past run's states and seqs leave the live server and the live seq alone", async () => {
    const host = new FakeHost([view("a", { generation: 3, state: "ready", restarts: 2 })]);
    // From an earlier run: a later-looking generation and a seq far ahead of this run's.
    host.pastEvents = rows(7, [
      stateEvent(98, "a", 9, { state: "retrying", attempt: 1, max_attempts: 10 }),
      stateEvent(99, "a", 9, { state: "gave_up" }),
    ]);
    const store = new DashboardStore(host);
    await store.start();
    await settled();

    expect(store.history.runs.map((r) => r.items.map((i) => i.text))).toEqual([["gave_up", "retrying — attempt 1/10"]]);
    expect(store.servers.a!.view).toMatchObject({ state: "ready", generation: 3, restarts: 2 });
    expect(store.activity).toEqual([]);
    expect(store.resyncs).toBe(0);
    // This run's seq 1 is the next event, not a duplicate of the past run's 99.
    host.push(stateEvent(1, "a", 3, { state: "reconnecting", attempt: 1, max_attempts: 10 }));
    expect(store.servers.a!.view.state).toBe("reconnecting");
    expect(store.activity.map((a) => a.seq)).toEqual([1]);
    expect(host.snapshot).toHaveBeenCalledTimes(1);
  });

  test("runs are grouped newest first, lines newest first, stage progress left out", () => {
    const older = rows(6, [stateEvent(1, "a", 1, { state: "connecting", stage: "spawn" }), stateEvent(2, "a", 1, { state: "ready" })]);
    const newer = rows(
      7,
      [
        stateEvent(1, "a", 1, { state: "connecting", stage: "spawn" }),
        stateEvent(2, "a", 1, { state: "connecting", stage: "initialize" }),
        failureEvent(3, "a", { kind: "process_exit", exit_code: 1, message: "exited" }),
        { v: 1, seq: 4, at: iso(T0), server: "a", generation: 1, type: "round_trip", round_trip_ms: 3 },
      ],
      10,
    );
    const runs = pastRuns([...newer, ...older]);
    expect(runs.map((r) => r.run)).toEqual([7, 6]);
    expect(runs[0]!.items.map((i) => [i.id, i.text])).toEqual([
      [12, "exited with code 1"],
      [10, "connecting"],
    ]);
    expect(runs[1]!.items.map((i) => i.text)).toEqual(["ready", "connecting"]);
    expect(runs[0]!.startedAt).toBe(RUN_START);
  });

  test("a history that cannot be read is an error line, not a crash", async () => {
    const host = new FakeHost([view("a")]);
    host.historyEvents.mockRejectedValueOnce({ kind: "history", message: "the history could not be read: disk I/O error" });
    const history = new HistoryStore(host);
    await history.load();
    expect(history.runs).toEqual([]);
    expect(history.error).toBe("the history could not be read: disk I/O error");
  });
});

describe("the mock host's history", () => {
  test("none by default; with ?mock&history two earlier runs, filtered and paged like the shell", async () => {
    expect(await new MockHost({ clock: new ManualClock() }).historyEvents({ limit: 10 })).toEqual([]);
    const host = new MockHost({ clock: new ManualClock(), history: true });
    const all = await host.historyEvents({ limit: 1000 });
    expect(new Set(all.map((e) => e.run))).toEqual(new Set([6, 7]));
    expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((a, b) => b - a));
    const sqlite = await host.historyEvents({ server: "sqlite", limit: 3 });
    expect(sqlite.every((e) => e.event.server === "sqlite")).toBe(true);
    const next = await host.historyEvents({ server: "sqlite", before: sqlite[2]!.id, limit: 1000 });
    expect(next[0]!.id).toBeLessThan(sqlite[2]!.id);
    const calls = await host.historyCalls({ server: "sqlite", limit: 10 });
    expect(calls.map((c) => [c.tool, c.outcome, c.error_kind])).toEqual([
      ["query", "ok", null],
      ["query", "error", "timeout"],
    ]);
    const failures = await host.historyFailures({ server: "github", limit: 10 });
    expect(failures.map((f) => f.failure.kind)).toEqual(["rate_limited"]);
    await expect(host.historyEvents({ limit: 0 })).rejects.toEqual({
      kind: "bad_query",
      message: "limit must be between 1 and 1000, got 0",
    });
    expect(host.calls).toEqual([]);
  });
});

describe("components", () => {
  test("the feed shows this session, then each earlier run under a divider with its start", () => {
    const live = [{ seq: 1, at: iso(T0), server: "a", generation: 1, sev: "ok" as const, text: "ready", detail: null }];
    const past = pastRuns(rows(7, [stateEvent(5, "b", 2, { state: "retired", reason: "auth" })]));
    render(ActivityFeed, { items: live, past, onopen: () => {} });
    const dividers = screen.getAllByTestId("activity-divider");
    expect(dividers).toHaveLength(1);
    expect(dividers[0]!.textContent).toContain("Before this session");
    expect(dividers[0]!.textContent).toContain(`run started ${runStartText(RUN_START)}`);
    const lines = screen.getAllByTestId("activity-past");
    expect(lines.map((l) => l.textContent)).toEqual([expect.stringContaining("retired — auth")]);
    // This session's line comes first.
    const items = within(screen.getByTestId("activity")).getAllByRole("button");
    expect(items[0]!.textContent).toContain("ready");
  });

  // The shell's events from before the window subscribed are only in the snapshot, so "nothing
  // has happened" would be untrue: the feed starts with the divider.
  test("with no line of this session yet, the feed starts with the earlier runs", () => {
    const past = pastRuns(rows(7, [stateEvent(5, "b", 2, { state: "ready" })]));
    render(ActivityFeed, { items: [], past, onopen: () => {} });
    expect(screen.queryByText(/Nothing has happened yet/)).toBeNull();
    const feed = screen.getByTestId("activity");
    expect(feed.querySelector("li")!.dataset.testid).toBe("activity-divider");
  });

  test("a server's detail lists its earlier failures and calls", async () => {
    const host = new FakeHost([view("a")]);
    const f: PastFailure = { id: 3, run: 7, run_started_at: RUN_START, at: iso(T0 - 3_600_000), server: "a", failure: failure({ kind: "timeout", message: "no answer" }) };
    const c: PastCall = { id: 4, run: 7, run_started_at: RUN_START, server: "a", tool: "query", started_at: iso(T0 - 3_000_000), duration_ms: 60_000, outcome: "error", error_kind: "timeout" };
    host.pastFailures = [f];
    host.pastCalls = [c];
    const history = new HistoryStore(host);
    render(PastRuns, { history, server: "a" });
    await settled();
    expect(host.historyFailures).toHaveBeenCalledWith({ server: "a", limit: 50 });
    expect(screen.getAllByTestId("past-failure")).toHaveLength(1);
    const call = screen.getByTestId("past-call");
    expect(call.textContent).toContain("query");
    expect(call.textContent).toContain("error (timeout)");
  });
});

test("a history notice is a warning banner, and not the demo", () => {
  const info = mockAppInfo(["history_locked"]);
  expect(info.mode).toBe("config");
  const [banner] = noticeBanners(info);
  expect(banner).toMatchObject({ tone: "warn", notice: "history_locked", title: "History not kept" });
  expect(banner!.message).toContain("in use by another Lifeline instance");
});
