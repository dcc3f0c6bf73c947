import { describe, expect, test } from "vitest";
import { FakeHost } from "../test/fake-host";
import { failureEvent, stateEvent, T0, view } from "../test/fixtures";
import { DashboardStore } from "./store.svelte";

async function started(host: FakeHost) {
  const store = new DashboardStore(host);
  await store.start();
  return store;
}

describe("snapshot, then events in seq order", () => {
  test("the snapshot gives the servers in the shell's order", async () => {
    const host = new FakeHost([view("b"), view("a", { state: "retrying", attempt: 2, max_attempts: 10 })]);
    const store = await started(host);
    expect(store.names).toEqual(["b", "a"]);
    expect(store.servers.a!.view.state).toBe("retrying");
    expect(store.sync).toBe("live");
  });

  test("events advance the view", async () => {
    const host = new FakeHost([view("a")]);
    const store = await started(host);
    host.push(stateEvent(10, "a", 2, { state: "connecting", stage: "initialize", attempt: 1, max_attempts: 10 }));
    expect(store.servers.a!.view).toMatchObject({ state: "connecting", stage: "initialize", generation: 2 });
    expect(store.servers.a!.view.restarts).toBe(1);
  });

  test("a replayed backlog (events from before the snapshot) does not wind the view back", async () => {
    const host = new FakeHost([view("a", { generation: 3, state: "ready", restarts: 2, last_restart_at: "x" })]);
    host.backlog = [
      stateEvent(1, "a", 1, { state: "ready" }),
      failureEvent(2, "a", { generation: 1 }),
      stateEvent(3, "a", 1, { state: "reconnecting", attempt: 1, max_attempts: 10 }),
      stateEvent(4, "a", 2, { state: "connecting", stage: "spawn" }),
      stateEvent(5, "a", 3, { state: "connecting", stage: "spawn" }),
      stateEvent(6, "a", 3, { state: "ready" }),
    ];
    const store = await started(host);
    const a = store.servers.a!;
    expect(a.view.state).toBe("ready");
    expect(a.view.restarts).toBe(2); // counted by the shell, not again from the replay
    expect(a.timeline).toHaveLength(5);
    expect(a.failures).toHaveLength(1);
    host.push(stateEvent(7, "a", 4, { state: "connecting", stage: "spawn" }));
    expect(a.view.restarts).toBe(3);
  });

  test("duplicates and old seqs are ignored", async () => {
    const host = new FakeHost([view("a")]);
    const store = await started(host);
    host.push(failureEvent(1, "a", {}), failureEvent(2, "a", {}), failureEvent(2, "a", {}), failureEvent(1, "a", {}));
    expect(store.servers.a!.failures.map((f) => f.seq)).toEqual([1, 2]);
  });
});

describe("a gap in seq re-reads the snapshot", () => {
  test("the store re-snapshots, marks the gap, then goes on from the event after it", async () => {
    const host = new FakeHost([view("a")]);
    const store = await started(host);
    host.push(stateEvent(1, "a", 1, { state: "ready" }), stateEvent(2, "a", 1, { state: "ready" }));
    expect(host.snapshot).toHaveBeenCalledTimes(1);

    // seq 3..6 are lost; meanwhile the server was retired.
    host.views = [view("a", { generation: 4, state: "retired", reason: "auth", restarts: 3 })];
    host.push(stateEvent(7, "a", 4, { state: "retired", reason: "auth" }));
    expect(store.sync).toBe("resyncing");
    await Promise.resolve();
    await new Promise((r) => setTimeout(r, 0));

    expect(host.snapshot).toHaveBeenCalledTimes(2);
    expect(store.sync).toBe("live");
    expect(store.resyncs).toBe(1);
    const a = store.servers.a!;
    expect(a.view).toMatchObject({ state: "retired", reason: "auth", generation: 4, restarts: 3 });
    expect(a.timeline.find((t) => t.kind === "gap")).toMatchObject({ after: 2, before: 7 });
    // The event that revealed the gap was applied, and the next one continues normally.
    expect(a.timeline.filter((t) => t.kind === "state").map((t) => t.kind === "state" && t.seq)).toEqual([1, 2, 7]);
    host.push(failureEvent(8, "a", { generation: 4 }));
    expect(a.failures.map((f) => f.seq)).toEqual([8]);
    expect(host.snapshot).toHaveBeenCalledTimes(2);
  });

  test("events that arrive during the re-snapshot are held and applied in order", async () => {
    const host = new FakeHost([view("a")]);
    const store = await started(host);
    host.push(failureEvent(1, "a", {}));
    let release!: () => void;
    host.snapshot.mockImplementationOnce(
      () => new Promise((r) => (release = () => r([view("a", { generation: 9, state: "ready" })]))),
    );
    host.push(failureEvent(5, "a", {}));
    host.push(failureEvent(7, "a", {}), failureEvent(6, "a", {}));
    release();
    await new Promise((r) => setTimeout(r, 0));
    expect(store.servers.a!.failures.map((f) => f.seq)).toEqual([1, 5, 6, 7]);
    expect(host.snapshot).toHaveBeenCalledTimes(2);
  });

  test("an event for a server the snapshot did not list re-reads it", async () => {
    const host = new FakeHost([view("a")]);
    const store = await started(host);
    host.push(failureEvent(1, "a", {}));
    host.views = [view("a"), view("new")];
    host.push(stateEvent(2, "new", 1, { state: "connecting", stage: "spawn" }));
    await new Promise((r) => setTimeout(r, 0));
    expect(store.names).toEqual(["a", "new"]);
    expect(store.servers.new!.view.state).toBe("connecting");
  });
});

describe("commands", () => {
  test("a failing command becomes a banner with kind and message", async () => {
    const host = new FakeHost([view("a")]);
    const store = await started(host);
    host.failWith = { kind: "unknown_server", message: "no server named `a`" };
    await store.command("reset", "a");
    expect(host.reset).toHaveBeenCalledWith("a");
    expect(store.banners).toMatchObject([
      { tone: "error", title: "Reset a", kind: "unknown_server", message: "no server named `a`" },
    ]);
    expect(store.inFlight).toEqual({});
    store.dismiss(store.banners[0]!.id);
    expect(store.banners).toEqual([]);
  });

  test("a Retry-After on the error is kept", async () => {
    const host = new FakeHost([view("a")]);
    const store = await started(host);
    host.reconnect.mockRejectedValueOnce({ kind: "rate_limited", message: "429", retry_after_ms: 45_000 });
    await store.command("reconnect", "a");
    expect(store.banners[0]).toMatchObject({ kind: "rate_limited", retryAfterMs: 45_000 });
  });

  test("a bare string from IPC still reads as kind + message", async () => {
    const host = new FakeHost([view("a")]);
    const store = await started(host);
    host.reconnect.mockRejectedValueOnce("command reconnect not found");
    await store.command("reconnect", "a");
    expect(store.banners[0]).toMatchObject({ kind: "ipc", message: "command reconnect not found" });
  });

  test("reconnect all failed says which servers", async () => {
    const host = new FakeHost([view("a"), view("b", { state: "quarantined", quarantine_level: 1 })]);
    const store = await started(host);
    expect(await store.reconnectAllFailed()).toEqual(["b"]);
    expect(store.banners).toMatchObject([{ tone: "info", message: "Reconnecting 1 server: b." }]);
  });
});

test("the activity feed keeps transitions and failures, not stage progress", async () => {
  const host = new FakeHost([view("a", { generation: 0, state: null })]);
  const store = await started(host);
  host.push(
    stateEvent(1, "a", 1, { state: "connecting", stage: "spawn" }, T0),
    stateEvent(2, "a", 1, { state: "connecting", stage: "initialize" }, T0 + 100),
    failureEvent(3, "a", { kind: "process_exit", exit_code: 127, phase: "connect", stage: "spawn" }, T0 + 200),
    stateEvent(4, "a", 1, { state: "retired", reason: "config" }, T0 + 200),
  );
  expect(store.activity.map((a) => a.text)).toEqual(["retired — config", "exited with code 127", "connecting"]);
});
