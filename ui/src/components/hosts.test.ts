// The Hosts section and the host lines of the activity feed, against a FakeHost.

import { render, screen, waitFor, within } from "@testing-library/svelte";
import { describe, expect, test } from "vitest";
import { DashboardStore } from "../lib/store.svelte";
import { FakeHost } from "../test/fake-host";
import { hostAttachedEvent, hostCallEvent, T0, view } from "../test/fixtures";
import DetailPanel from "./DetailPanel.svelte";

async function panel(host: FakeHost) {
  const store = new DashboardStore(host);
  await store.start();
  render(DetailPanel, { store, server: "fs", onclose: () => {} });
  return store;
}

describe("the Hosts section", () => {
  test("with no host it says how to attach one", async () => {
    await panel(new FakeHost([view("fs")]));
    const s = within(await screen.findByTestId("hosts"));
    expect(await s.findByText(/No host is attached/)).toBeTruthy();
    expect(s.getByText("lifeline connect fs")).toBeTruthy();
    expect(s.queryByTestId("host-tools")).toBeNull();
  });

  test("shows the attached hosts, their live calls and the hour's calls by tool", async () => {
    const host = new FakeHost([view("fs")]);
    host.hostsView = {
      hosts: [
        {
          id: 3,
          name: "cursor",
          version: "1.7.2",
          protocol_version: "2025-06-18",
          mode: "app",
          attached_at: "2026-12-02T05:00:00.000Z",
          live_calls: 2,
        },
      ],
      live_calls: 2,
      tools: [
        { tool: "read_file", calls: 40, errors: 3, p50_ms: 4, p95_ms: 31 },
        { tool: "search", calls: 1, errors: 0, p50_ms: null, p95_ms: null },
      ],
    };
    await panel(host);
    const s = within(await screen.findByTestId("hosts"));
    const h = await s.findByTestId("host");
    expect(h.textContent).toContain("cursor");
    expect(h.textContent).toContain("1.7.2");
    expect(h.textContent).toContain("through the app · MCP 2025-06-18");
    expect(h.textContent).toContain("2 in flight");
    expect(s.getByTestId("hosts-live").textContent).toBe("1 attached · 2 in flight");
    const rows = s.getAllByTestId("host-tool").map((r) => [...r.children].map((c) => c.textContent));
    expect(rows).toEqual([
      ["read_file", "40", "3", "4 ms", "31 ms"],
      ["search", "1", "0", "—", "—"],
    ]);
    expect(host.serverHosts).toHaveBeenCalledWith("fs");
  });

  test("is read again when a host event of its server arrives", async () => {
    const host = new FakeHost([view("fs"), view("other")]);
    await panel(host);
    await screen.findByText(/No host is attached/);
    const before = host.serverHosts.mock.calls.length;
    host.push(hostCallEvent(1, "other", "cursor", "read"));
    host.push(hostAttachedEvent(2, "fs", "claude-code"));
    await waitFor(() => expect(host.serverHosts.mock.calls.length).toBe(before + 1));
  });
});

describe("host lines in the activity feed", () => {
  test("a host attaching is a line; a busy host's calls share one", async () => {
    const host = new FakeHost([view("fs")]);
    const store = new DashboardStore(host);
    await store.start();
    host.push(
      hostAttachedEvent(1, "fs", "cursor", T0),
      hostCallEvent(2, "fs", "cursor", "read", "ok", T0 + 1000),
      hostCallEvent(3, "fs", "cursor", "read", "error", T0 + 2000),
      hostCallEvent(4, "fs", "cursor", "list", "ok", T0 + 3000),
    );
    expect(store.activity.map((a) => a.text)).toEqual(["cursor: 3 calls, 1 failed", "cursor 1.2.0 attached"]);
    expect(store.activity[0]!.detail).toBe("last: list ok · 12 ms");
    expect(store.activity[0]!.host).toBe("cursor");
    // Another host, or a call more than a minute later, starts a new line.
    host.push(
      hostCallEvent(5, "fs", "claude-code", "read", "ok", T0 + 4000, 2),
      hostCallEvent(6, "fs", "claude-code", "read", "tool_error", T0 + 120_000, 2),
    );
    expect(store.activity.map((a) => a.text).slice(0, 3)).toEqual([
      "claude-code: read tool error",
      "claude-code: read ok",
      "cursor: 3 calls, 1 failed",
    ]);
  });
});
