import { fireEvent, render, screen, within } from "@testing-library/svelte";
import { tick } from "svelte";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import App from "../App.svelte";
import { MockHost } from "../host/mock";
import { noticeBanners } from "../lib/notices";
import { DashboardStore } from "../lib/store.svelte";
import { FakeHost } from "../test/fake-host";
import { appInfo, failure, failureEvent, iso, ManualClock, stateEvent, T0, view } from "../test/fixtures";
import Banners from "./Banners.svelte";
import Countdown from "./Countdown.svelte";
import DetailPanel from "./DetailPanel.svelte";
import ServerList from "./ServerList.svelte";
import StateBadge from "./StateBadge.svelte";

async function storeWith(host: FakeHost) {
  const store = new DashboardStore(host);
  await store.start();
  return store;
}

const rows = () => screen.getAllByTestId("server-row");
const rowNames = () => rows().map((r) => r.dataset.server);

describe("StateBadge", () => {
  test("text in the vocabulary, raw state for automation, colour by severity", () => {
    render(StateBadge, {
      info: { state: "reconnecting", stage: null, attempt: 3, max_attempts: 10, quarantine_level: 0, reason: null },
    });
    const badge = screen.getByTestId("state-badge");
    expect(badge.textContent?.trim()).toBe("reconnecting — attempt 3/10");
    expect(badge.dataset.state).toBe("reconnecting");
    expect(badge.className).toContain("sev-warn");
  });
});

describe("Countdown ticks from the shared clock", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(T0);
  });
  afterEach(() => vi.useRealTimers());

  test("counts down every second, then says now", async () => {
    render(Countdown, { at: iso(T0 + 3_000), state: "retrying" });
    const value = () => screen.getByTestId("countdown").textContent?.replace(/\s+/g, " ").trim();
    expect(value()).toBe("retry in 3 s");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(value()).toBe("retry in 2 s");
    await vi.advanceTimersByTimeAsync(2_000);
    expect(value()).toBe("retry in now");
  });

  test("a hundred countdowns share one timer", async () => {
    const many = Array.from({ length: 100 }, (_, i) => render(Countdown, { at: iso(T0 + 5_000 + i), state: "retrying" }));
    await tick();
    expect(vi.getTimerCount()).toBe(1);
    for (const r of many) r.unmount();
    await tick();
    expect(vi.getTimerCount()).toBe(0); // the clock stops when nothing reads it
  });

  test("a quarantined server waits for a probe", () => {
    render(Countdown, { at: iso(T0 + 38_000), state: "quarantined" });
    expect(screen.getByTestId("countdown").textContent).toContain("probe in");
  });
});

describe("ServerList", () => {
  const servers = () => [
    view("filesystem", { restarts: 1, last_restart_at: iso(Date.now() - 2 * 3600_000) }),
    view("sqlite", { state: "quarantined", quarantine_level: 2, next_attempt_at: iso(Date.now() + 38_000) }),
    view("linear", { state: "retired", reason: "auth", transport: "sse", tools: [] }),
    view("github", { state: "reconnecting", attempt: 3, max_attempts: 10, transport: "http", tools_stale: true, generation: 5 }),
  ];

  test("one row per server with its badge, restarts and stale tools", async () => {
    const store = await storeWith(new FakeHost(servers()));
    render(ServerList, { store, onopen: () => {} });
    expect(rowNames()).toEqual(["filesystem", "github", "linear", "sqlite"]);
    const fs = rows()[0]!;
    expect(within(fs).getByTestId("restarts").textContent?.trim()).toBe("1 (2 h ago)");
    const gh = rows()[1]!;
    expect(within(gh).getByTestId("state-badge").textContent?.trim()).toBe("reconnecting — attempt 3/10");
    expect(within(gh).getByTestId("tools").textContent).toContain("stale");
    expect(within(gh).getByTestId("generation").textContent?.trim()).toBe("5");
    expect(gh.dataset.generation).toBe("5");
    expect(within(rows()[3]!).getByTestId("quarantine").dataset.level).toBe("2");
  });

  test("filter and sort by severity", async () => {
    const store = await storeWith(new FakeHost(servers()));
    render(ServerList, { store, onopen: () => {} });
    await fireEvent.input(screen.getByTestId("filter"), { target: { value: "quarantined" } });
    expect(rowNames()).toEqual(["sqlite"]);
    await fireEvent.input(screen.getByTestId("filter"), { target: { value: "" } });
    await fireEvent.click(screen.getByTestId("sort-severity"));
    expect(rowNames()).toEqual(["linear", "sqlite", "github", "filesystem"]);
  });

  test("Enter opens a row; arrows move between rows; Reconnect calls the host without opening", async () => {
    const host = new FakeHost(servers());
    const store = await storeWith(host);
    const onopen = vi.fn();
    render(ServerList, { store, onopen });
    const [first, second] = rows();
    first!.focus();
    await fireEvent.keyDown(first!, { key: "ArrowDown" });
    expect(document.activeElement).toBe(second);
    await fireEvent.keyDown(second!, { key: "Enter" });
    expect(onopen).toHaveBeenCalledWith("github");

    await fireEvent.click(within(rows()[3]!).getByTestId("row-reconnect"));
    expect(host.reconnect).toHaveBeenCalledWith("sqlite");
    expect(onopen).toHaveBeenCalledTimes(1);

    await fireEvent.click(screen.getByTestId("reconnect-all"));
    expect(host.reconnectAllFailed).toHaveBeenCalledTimes(1);
  });
});

describe("DetailPanel", () => {
  test("shows the cause, the de-duplicated history with glossed exits, and the tools", async () => {
    const host = new FakeHost([view("sqlite", { generation: 3, state: "reconnecting", attempt: 3, max_attempts: 10 })]);
    const store = await storeWith(host);
    const crash = { kind: "process_exit", phase: "connect", stage: "initialize", exit_code: 137, message: "killed" } as const;
    const notFound = failure({
      kind: "spawn",
      stage: "spawn",
      method: null,
      url_path: null,
      exit_code: 127,
      attempt: 4,
      generation: 4,
      message: "uvx: command not found (PATH=/usr/bin:/bin)",
    });
    host.push(
      failureEvent(1, "sqlite", { ...crash, generation: 1 }, T0),
      failureEvent(2, "sqlite", { ...crash, generation: 2 }, T0 + 60_000),
      failureEvent(3, "sqlite", { ...crash, generation: 3 }, T0 + 120_000),
      stateEvent(4, "sqlite", 4, { state: "retired", reason: "config", cause: notFound }, T0 + 121_000),
      { v: 1, seq: 5, at: iso(T0 + 121_000), server: "sqlite", generation: 4, type: "tools", count: 0, stale: false, names: [], held: 0, new: 0 },
    );
    render(DetailPanel, { store, server: "sqlite", onclose: () => {} });
    await tick();

    expect(screen.getByTestId("detail-generation").textContent).toBe("gen 4");
    expect(screen.getByTestId("cause").textContent).toContain("command not found");
    expect(screen.getByTestId("cause").textContent).toContain("exited with code 127 — command not found");
    const summaries = screen.getAllByTestId("failure-summary").map((s) => s.textContent?.trim());
    expect(summaries).toEqual(["exited with code 137 ×3 over 2 min"]);
    const group = screen.getByTestId("failure-group");
    await fireEvent.click(within(group).getByText(/×3/));
    expect(within(group).getByTestId("exit").textContent).toContain("killed by SIGKILL");
    expect(screen.getByTestId("tools-list").textContent).toContain("dropped while the server is retired");
  });

  test("buttons call the host; an error shows as a banner with kind and message", async () => {
    const host = new FakeHost([view("a", { state: "quarantined", quarantine_level: 1 })]);
    const store = await storeWith(host);
    render(App, { store, initialSelection: "a" });
    await fireEvent.click(screen.getByTestId("detail-reconnect"));
    expect(host.reconnect).toHaveBeenCalledWith("a");
    host.failWith = { kind: "supervisor_stopped", message: "the supervisor of `a` has stopped" };
    await fireEvent.click(screen.getByTestId("detail-reset"));
    await tick();
    const banner = await screen.findByTestId("banner-error");
    expect(banner.textContent).toContain("Reset a failed");
    expect(within(banner).getByTestId("banner-kind").textContent).toBe("supervisor_stopped");
    expect(within(banner).getByTestId("banner-message").textContent).toBe("the supervisor of `a` has stopped");
    host.failWith = null;
    await fireEvent.click(screen.getByTestId("detail-disable"));
    expect(host.disable).toHaveBeenCalledWith("a");
  });
});

describe("notices from app_info", () => {
  const CONFIG = "/home/ada/.config/lifeline/config.json";

  test("demo is an informational banner naming the config path; the rest are warnings with the message", () => {
    const notices = [
      { kind: "demo", message: "There is no config file at …, so this is a demo" },
      { kind: "fixture_missing", message: "looked for /opt/lifeline/lifeline-fixture" },
      { kind: "fixture_failed", message: "the HTTP fixture did not start" },
      { kind: "config", message: "expected `mcpServers` to be an object" },
    ];
    const banners = noticeBanners(appInfo({ mode: "demo", config_path: CONFIG, notices }));
    const ondismiss = vi.fn();
    render(Banners, { banners, ondismiss });

    const info = screen.getByTestId("banner-info");
    expect(info.dataset.notice).toBe("demo");
    expect(info.getAttribute("role")).toBe("status");
    expect(info.textContent?.replace(/\s+/g, " ").trim()).toMatch(
      /^Demo mode\s*These are built-in fixture servers that show each way a connection fails\. Add your own with “\+ Add server”, or import another client's servers; they are saved to \/home\/ada\/\.config\/lifeline\/config\.json\./,
    );

    const warnings = screen.getAllByTestId("banner-warn");
    expect(warnings.map((w) => w.dataset.notice)).toEqual(["fixture_missing", "fixture_failed", "config"]);
    for (const w of warnings) {
      expect(w.getAttribute("role")).toBe("status"); // calm: not an alert
      expect(w.textContent).not.toContain("failed failed");
    }
    expect(warnings.map((w) => within(w).getByTestId("banner-message").textContent)).toEqual([
      "looked for /opt/lifeline/lifeline-fixture",
      "the HTTP fixture did not start",
      "expected `mcpServers` to be an object",
    ]);
    expect(screen.queryByTestId("banner-error")).toBeNull();

    fireEvent.click(within(warnings[1]!).getByLabelText("Dismiss"));
    expect(ondismiss).toHaveBeenCalledWith(banners[2]!.id);
  });

  test("App shows the host's notices once, each dismissible, beside the store's banners", async () => {
    const host = new FakeHost([view("a", { state: "ready" })]);
    host.info = appInfo({
      mode: "demo",
      config_path: CONFIG,
      notices: [
        { kind: "demo", message: "demo" },
        { kind: "fixture_missing", message: "the fixture is missing" },
      ],
    });
    const store = await storeWith(host);
    render(App, { store });
    const info = await screen.findByTestId("banner-info");
    expect(info.textContent).toContain(CONFIG);
    expect(screen.getByTestId("banner-warn").textContent).toContain("the fixture is missing");
    expect(host.appInfo).toHaveBeenCalledTimes(1);

    store.error("Reset a", { kind: "supervisor_stopped", message: "stopped" });
    await tick();
    expect(screen.getByTestId("banner-error")).toBeTruthy();

    await fireEvent.click(within(info).getByLabelText("Dismiss"));
    expect(screen.queryByTestId("banner-info")).toBeNull();
    expect(screen.getByTestId("banner-warn")).toBeTruthy();
    expect(screen.getByTestId("banner-error")).toBeTruthy();
    await fireEvent.click(within(screen.getByTestId("banner-warn")).getByLabelText("Dismiss"));
    expect(screen.queryByTestId("banner-warn")).toBeNull();
    expect(store.banners).toHaveLength(1); // the store's banner is untouched
    expect(host.appInfo).toHaveBeenCalledTimes(1);
  });

  test("one banner while remote servers wait for the network, gone when they stop", async () => {
    const host = new FakeHost([
      view("a", { state: "reconnecting", reason: "offline", generation: 2 }),
      view("b", { state: "retrying", reason: "offline", generation: 2 }),
      view("c", { state: "ready" }),
    ]);
    const store = await storeWith(host);
    render(App, { store });
    const banner = await screen.findByTestId("banner-info");
    expect(banner.dataset.notice).toBe("offline");
    expect(banner.textContent).toContain("Offline: 2 remote servers are waiting for the network");
    expect(within(banner).queryByLabelText("Dismiss")).toBeNull(); // it follows the state
    host.push(stateEvent(1, "a", 3, { state: "ready" }));
    await tick();
    expect(screen.getByTestId("banner-info").textContent).toContain(
      "Offline: 1 remote server is waiting for the network",
    );
    host.push(stateEvent(2, "b", 3, { state: "ready" }));
    await tick();
    expect(screen.queryByTestId("banner-info")).toBeNull();
  });

  test("no notices (the mock's default): no banner area at all", async () => {
    const host = new FakeHost([view("a", { state: "ready" })]);
    const store = await storeWith(host);
    const { container } = render(App, { store });
    await tick();
    await tick();
    expect(host.appInfo).toHaveBeenCalledTimes(1);
    expect(container.querySelector(".banner-area")).toBeNull();
  });
});

describe("App against the mock host", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["Date", "setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    vi.setSystemTime(T0);
  });
  afterEach(() => vi.useRealTimers());

  test("the four recorded servers with their badges; Escape closes the detail", async () => {
    const host = new MockHost({ clock: new ManualClock(T0) });
    const store = new DashboardStore(host);
    await store.start();
    render(App, { store });
    const badges = Object.fromEntries(
      rows().map((r) => [r.dataset.server, within(r).getByTestId("state-badge").textContent?.trim()]),
    );
    expect(badges).toEqual({
      filesystem: "ready",
      github: "retrying — attempt 2/10",
      linear: "retired — auth",
      sqlite: "quarantined — level 2",
    });
    expect(screen.getByTestId("mock-tag")).toBeTruthy();

    await fireEvent.click(rows()[3]!);
    expect(screen.getByTestId("detail").dataset.server).toBe("sqlite");
    expect(screen.getAllByTestId("failure-summary")[0]!.textContent).toMatch(/^exited with code 1 ×11 over 2 min$/);
    await fireEvent.keyDown(window, { key: "Escape" });
    expect(screen.queryByTestId("detail")).toBeNull();
  });
});
