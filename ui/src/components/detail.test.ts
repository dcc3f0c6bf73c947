// The detail panel's tools, call tester and server internals, against a FakeHost.

import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { describe, expect, test } from "vitest";
import type { CallOptions, CallProgress, ToolDef } from "../host/types";
import { DashboardStore } from "../lib/store.svelte";
import { FakeHost } from "../test/fake-host";
import { view } from "../test/fixtures";
import DetailPanel from "./DetailPanel.svelte";

const LIST_ISSUES: ToolDef = {
  name: "list_issues",
  description: "List issues in a repository.",
  inputSchema: {
    type: "object",
    properties: {
      owner: { type: "string", description: "Repository owner" },
      per_page: { type: "integer", minimum: 1, maximum: 100 },
      state: { type: "string", enum: ["open", "closed"] },
      draft: { type: "boolean" },
    },
    required: ["owner"],
  },
  annotations: { readOnlyHint: true },
};

const READ_MANY: ToolDef = {
  name: "read_many",
  inputSchema: { type: "object", properties: { paths: { type: "array", items: { type: "string" } } }, required: ["paths"] },
};

async function panel(over: Parameters<typeof view>[1] = {}) {
  const host = new FakeHost([view("gh", { tools: ["list_issues", "read_many"], ...over })]);
  host.tools = [LIST_ISSUES, READ_MANY];
  const store = new DashboardStore(host);
  await store.start();
  render(DetailPanel, { store, server: "gh", onclose: () => {} });
  return host;
}

async function openTool(name: string) {
  await fireEvent.click(await screen.findByTestId(`tool-${name}`));
  return within(await screen.findByTestId("tool-tester"));
}

const fieldError = (t: ReturnType<typeof within>, name: string) =>
  t.getByTestId(`field-${name}`).querySelector("[data-testid=field-error]")?.textContent ?? null;

describe("the call tester", () => {
  test("a simple schema becomes a form with required marks; invalid values are refused per field", async () => {
    const host = await panel();
    const t = await openTool("list_issues");
    expect(screen.getByTestId("tool-def").textContent).toContain("List issues in a repository.");
    expect(screen.getByTestId("tool-def").textContent).toContain("read-only");
    expect(t.getByTestId("field-owner").textContent).toContain("*");
    expect(t.getByTestId("field-per_page").textContent).not.toContain("*");
    expect(t.getByTestId("field-state").querySelector("select")).not.toBeNull();
    expect(t.getByTestId("field-draft").querySelector("input[type=checkbox]")).not.toBeNull();

    await fireEvent.input(t.getByTestId("field-per_page").querySelector("input")!, { target: { value: "500" } });
    await fireEvent.click(t.getByTestId("tester-run"));
    expect(fieldError(t, "owner")).toBe("Required");
    expect(fieldError(t, "per_page")).toContain("100");
    expect(t.getByTestId("field-per_page").querySelector("input")!.getAttribute("aria-invalid")).toBe("true");
    expect(host.callTool).not.toHaveBeenCalled();

    await fireEvent.input(t.getByTestId("field-per_page").querySelector("input")!, { target: { value: "abc" } });
    await fireEvent.click(t.getByTestId("tester-run"));
    expect(fieldError(t, "per_page")).toBe("Not a number: “abc”");
  });

  test("valid arguments are sent with a call id; the result, a tool error and the duration are shown", async () => {
    const host = await panel();
    host.callTool.mockResolvedValueOnce({ content: [{ type: "text", text: "#1 crash on start" }], isError: false });
    const t = await openTool("list_issues");
    await fireEvent.input(t.getByTestId("field-owner").querySelector("input")!, { target: { value: "ada" } });
    await fireEvent.change(t.getByTestId("field-state").querySelector("select")!, { target: { value: "1" } });
    await fireEvent.click(t.getByTestId("tester-run"));
    const result = await t.findByTestId("tester-result");
    expect(result.textContent).toContain("OK");
    expect(result.textContent).toMatch(/\d+ ms/);
    expect(t.getByTestId("tester-outcome").textContent).toContain("#1 crash on start");
    const [server, tool, args, opts] = host.callTool.mock.calls[0]!;
    expect([server, tool, args]).toEqual(["gh", "list_issues", { owner: "ada", state: "closed" }]);
    expect(opts?.callId).toMatch(/\S/);

    host.callTool.mockResolvedValueOnce({ content: [{ type: "text", text: "rate limit" }], isError: true });
    await fireEvent.click(t.getByTestId("tester-run"));
    await waitFor(() => expect(t.getByTestId("tester-result").textContent).toContain("Tool error"));
    expect(t.getByTestId("tester-result").classList.contains("tool-error")).toBe(true);
  });

  test("progress shows as n of total, and Cancel cancels the call by its id and shows Cancelled", async () => {
    const host = await panel();
    let opts: CallOptions | undefined;
    let reject: (e: unknown) => void = () => {};
    host.callTool.mockImplementationOnce(
      (_s: string, _t: string, _a: unknown, o?: CallOptions) =>
        new Promise((_resolve, rej) => {
          opts = o;
          reject = rej;
        }),
    );
    const t = await openTool("list_issues");
    await fireEvent.input(t.getByTestId("field-owner").querySelector("input")!, { target: { value: "ada" } });
    await fireEvent.click(t.getByTestId("tester-run"));
    expect(await t.findByTestId("tester-progress")).toBeTruthy();
    const progress: CallProgress = { call_id: opts!.callId!, progress: 3, total: 5, message: "page 3" };
    opts!.onProgress!(progress);
    await waitFor(() => expect(t.getByTestId("tester-progress").textContent).toContain("3 of 5"));
    expect(t.getByTestId("tester-progress").textContent).toContain("page 3");
    expect(t.getByTestId("tester-progress").querySelector("progress")!.getAttribute("value")).toBe("0.6");
    expect(t.queryByTestId("tester-run")).toBeNull();

    await fireEvent.click(t.getByTestId("tester-cancel"));
    expect(host.cancelCall).toHaveBeenCalledWith(opts!.callId);
    reject({ kind: "cancelled", message: "the call was cancelled; the server was sent notifications/cancelled" });
    const error = await t.findByTestId("tester-error");
    expect(error.textContent).toContain("Cancelled");
    expect(t.getByTestId("tester-outcome").textContent).toContain("notifications/cancelled");
    expect(t.queryByTestId("tester-progress")).toBeNull();
  });

  test("a schema too rich for a form takes raw JSON, checked before sending", async () => {
    const host = await panel();
    const t = await openTool("read_many");
    const raw = t.getByTestId("tester-raw") as HTMLTextAreaElement;
    await fireEvent.input(raw, { target: { value: "{paths: 1}" } });
    await fireEvent.click(t.getByTestId("tester-run"));
    expect(t.getByTestId("args-error").textContent).toContain("Not valid JSON");
    await fireEvent.input(raw, { target: { value: '{"paths": "a"}' } });
    await fireEvent.click(t.getByTestId("tester-run"));
    expect(t.getByTestId("args-error").textContent).toMatch(/^paths: .*array/);
    expect(host.callTool).not.toHaveBeenCalled();
    await fireEvent.input(raw, { target: { value: '{"paths": ["a"]}' } });
    await fireEvent.click(t.getByTestId("tester-run"));
    await t.findByTestId("tester-result");
    expect(host.callTool.mock.calls[0]![2]).toEqual({ paths: ["a"] });
  });

  test("Run is off while the server is not ready", async () => {
    await panel({ state: "reconnecting", tools_stale: true });
    const t = await openTool("list_issues");
    expect((t.getByTestId("tester-run") as HTMLButtonElement).disabled).toBe(true);
  });
});

describe("server internals", () => {
  test("stderr of two generations, the resolved command with env names only, the masked config", async () => {
    const host = new FakeHost([view("fs", { generation: 4 })]);
    host.stderr = [
      { generation: 3, lines: ["FATAL: out of memory"], truncated: true },
      { generation: 4, lines: ["server running on stdio"], truncated: false },
    ];
    host.command = {
      command: "npx",
      program: "/usr/local/bin/npx",
      args: ["-y", "server-fs", "--token=***"],
      cwd: null,
      path: [],
      path_source: "config",
      env_names: ["FS_TOKEN"],
      problem: null,
    };
    host.maskedConfig = { name: "fs", type: "stdio", env: { FS_TOKEN: "***" } };
    const store = new DashboardStore(host);
    await store.start();
    render(DetailPanel, { store, server: "fs", onclose: () => {} });

    const gens = await screen.findAllByTestId("stderr-gen");
    expect(gens.map((g) => g.dataset.generation)).toEqual(["4", "3"]);
    expect(gens[0]!.textContent).toContain("gen 4");
    expect(gens[0]!.textContent).toContain("current");
    expect(gens[1]!.textContent).toContain("previous");
    expect(gens[1]!.textContent).toContain("earlier output dropped");
    expect(gens[1]!.textContent).toContain("FATAL: out of memory");

    const command = screen.getByTestId("command");
    expect(screen.getByTestId("command-program").textContent).toBe("/usr/local/bin/npx");
    expect(command.textContent).toContain("--token=***");
    expect(command.textContent).toContain("set by the config (value hidden)");
    expect(screen.getByTestId("command-env").textContent).toBe("FS_TOKEN");
    expect(screen.getByTestId("config").textContent).toContain('"FS_TOKEN": "***"');
    const policy = screen.getByTestId("policy").textContent ?? "";
    expect(policy).toContain("10 attempts per outage");
    expect(policy).toContain("30 s → 1 min → 2 min");

    host.stderr = [...host.stderr, { generation: 5, lines: ["again"], truncated: false }];
    await fireEvent.click(screen.getByTestId("stderr-refresh"));
    await waitFor(() => expect(screen.getAllByTestId("stderr-gen")).toHaveLength(3));
  });

  test("a command that is not found says which PATH was searched", async () => {
    const host = new FakeHost([view("db")]);
    host.command = {
      command: "uvx",
      program: null,
      args: [],
      cwd: null,
      path: ["/usr/bin", "/bin"],
      path_source: "app",
      env_names: [],
      problem: "`uvx` was not found in PATH: /usr/bin, /bin; install it or give an absolute path in the config",
    };
    const store = new DashboardStore(host);
    await store.start();
    render(DetailPanel, { store, server: "db", onclose: () => {} });
    expect((await screen.findByTestId("command-problem")).textContent).toContain("PATH: /usr/bin, /bin");
    expect(screen.getByTestId("command-program").textContent).toBe("uvx (not found)");
    expect(screen.getByTestId("command").textContent).toContain("2 directories, from the app");
  });
});

describe("what a server sends is text", () => {
  // A hostile server names and describes its tools, answers calls and writes stderr: markup
  // in any of it is shown as characters, never parsed (the UI has no {@html}; docs/security.md).
  const MARKUP = '<img src="x" onerror="globalThis.pwned=1"><script>globalThis.pwned=1</script>';

  test("markup in a tool's name, description, schema, result and stderr makes no element", async () => {
    const host = new FakeHost([view("evil", { tools: [`t${MARKUP}`] })]);
    host.tools = [
      {
        name: `t${MARKUP}`,
        description: `Lists. ${MARKUP}`,
        inputSchema: { type: "object", properties: { q: { type: "string", description: MARKUP } } },
      },
    ];
    host.stderr = [{ generation: 1, lines: [MARKUP], truncated: false }];
    host.callTool.mockResolvedValueOnce({ content: [{ type: "text", text: MARKUP }], isError: false });
    const store = new DashboardStore(host);
    await store.start();
    const { container } = render(DetailPanel, { store, server: "evil", onclose: () => {} });

    const t = await openTool(`t${MARKUP}`);
    await fireEvent.click(t.getByTestId("tester-run"));
    await waitFor(() => expect(t.getByTestId("tester-outcome").textContent).toContain(MARKUP));
    await screen.findAllByTestId("stderr-gen");
    expect(screen.getByTestId("tool-def").textContent).toContain(`Lists. ${MARKUP}`);
    expect(container.textContent).toContain(MARKUP);
    expect(container.querySelector("img, script")).toBeNull();
    expect((globalThis as { pwned?: number }).pwned).toBeUndefined();
  });
});

describe("switching servers", () => {
  test("a tool open on one server closes when the next server has no such tool", async () => {
    const host = new FakeHost([view("gh", { tools: ["list_issues"] }), view("db", { tools: ["read_query"] })]);
    host.tools = [LIST_ISSUES];
    const store = new DashboardStore(host);
    await store.start();
    const { rerender } = render(DetailPanel, { store, server: "gh", onclose: () => {} });
    await fireEvent.click(await screen.findByTestId("tool-list_issues"));
    await screen.findByTestId("tool-tester");
    host.tools = [{ name: "read_query", inputSchema: { type: "object" } }];
    await rerender({ store, server: "db", onclose: () => {} });
    await waitFor(() => expect(host.toolList).toHaveBeenLastCalledWith("db"));
    expect(screen.queryByTestId("tool-tester")).toBeNull();
  });
});

describe("the protocol fact", () => {
  test("shows the negotiated revision, and names the legacy transport for 2024-11-05", async () => {
    await panel({ protocol_version: "2025-11-25", transport: "http" });
    expect(screen.getByTestId("detail-protocol").textContent).toBe("2025-11-25");
  });

  test("2024-11-05 over HTTP is the legacy HTTP+SSE transport", async () => {
    await panel({ protocol_version: "2024-11-05", transport: "http" });
    expect(screen.getByTestId("detail-protocol").textContent).toBe("2024-11-05 · legacy HTTP+SSE");
  });

  test("2024-11-05 over stdio is only the oldest revision, never a transport", async () => {
    await panel({ protocol_version: "2024-11-05", transport: "stdio" });
    expect(screen.getByTestId("detail-protocol").textContent).toBe("2024-11-05 · oldest revision");
  });

  test("2026-07-28 is the stateless revision", async () => {
    await panel({ protocol_version: "2026-07-28", transport: "http" });
    expect(screen.getByTestId("detail-protocol").textContent).toBe("2026-07-28 · stateless");
  });
});
