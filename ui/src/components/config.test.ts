import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { tick } from "svelte";
import { describe, expect, test } from "vitest";
import App from "../App.svelte";
import type { AppInfo, ServerForm } from "../host/types";
import { ConfigStore, importSummary, toConfigError } from "../lib/config.svelte";
import { DashboardStore } from "../lib/store.svelte";
import { FakeHost } from "../test/fake-host";
import { appInfo, view } from "../test/fixtures";

const CONFIG = "/home/ada/.config/lifeline/config.json";

function form(name: string, over: Partial<ServerForm> = {}): ServerForm {
  return { name, transport: "stdio", command: "npx", args: [], env: [], cwd: null, url: "", headers: [], disabled: false, ...over };
}

function info(mode: "config" | "demo", notices: AppInfo["notices"] = []): AppInfo {
  return appInfo({ mode, config_path: CONFIG, notices });
}

async function app(host: FakeHost, initialSelection: string | null = null) {
  const store = new DashboardStore(host);
  await store.start();
  render(App, { store, initialSelection });
  // The config store reads app_info, then config_get (and import_detect in demo mode), on mount.
  await waitFor(() => expect(host.configGet).toHaveBeenCalled());
  return store;
}

describe("ConfigStore", () => {
  test("config_changed re-reads the list: servers appear and vanish, the info follows", async () => {
    const host = new FakeHost([view("a"), view("b")]);
    const store = new DashboardStore(host);
    await store.start();
    const seen: AppInfo[] = [];
    const config = new ConfigStore(store, (i) => seen.push(i));
    await config.start();
    expect(host.onConfigChanged).toHaveBeenCalledTimes(1);

    host.views = [view("b"), view("c")];
    host.config = { path: CONFIG, mode: "config", servers: [form("b"), form("c")], problem: null };
    await config.changed(info("config"));
    expect(store.names).toEqual(["b", "c"]);
    expect(config.forms.map((f) => f.name)).toEqual(["b", "c"]);
    expect(seen.at(-1)?.mode).toBe("config");
  });

  test("a refused save keeps the editor open with the fields; a good one closes it", async () => {
    const host = new FakeHost([]);
    const store = new DashboardStore(host);
    await store.start();
    const config = new ConfigStore(store);
    config.openAdd();
    host.failWith = {
      kind: "config",
      message: "The server was not saved: url: must be an http:// or https:// URL.",
      fields: [{ field: "url", message: "must be an http:// or https:// URL" }],
    } as never;
    expect(await config.save(form("web", { transport: "http", url: "ftp://x" }))).toBe(false);
    expect(config.editing?.mode).toBe("add");
    expect(config.error?.fields).toEqual([{ field: "url", message: "must be an http:// or https:// URL" }]);

    host.failWith = null;
    expect(await config.save(form("web", { transport: "http", url: "https://x/mcp" }))).toBe(true);
    expect(host.serverAdd).toHaveBeenCalledTimes(2);
    expect(config.editing).toBeNull();
    expect(store.banners.at(-1)?.title).toBe("Added");
  });

  test("errors keep their fields; the import summary names conflicts", () => {
    expect(toConfigError({ kind: "config", message: "m", fields: [{ field: "env.K", message: "x" }, { bad: 1 }] })).toEqual({
      kind: "config",
      message: "m",
      fields: [{ field: "env.K", message: "x" }],
    });
    expect(toConfigError("boom")).toEqual({ kind: "ipc", message: "boom" });
    expect(
      importSummary({ added: ["a", "b"], conflicts: [{ name: "c", reason: "r" }], skipped: [], disabled: [] }),
    ).toBe("Added 2 servers: a, b. Already configured, kept as they were: c.");
  });
});

describe("the editor in the app", () => {
  test("Add server opens the editor; field errors show under their inputs", async () => {
    const host = new FakeHost([view("a")]);
    await app(host);
    await fireEvent.click(screen.getByTestId("add-server"));
    const editor = screen.getByTestId("editor-dialog");
    await fireEvent.input(within(editor).getByTestId("editor-name"), { target: { value: "a b" } });
    await fireEvent.input(within(editor).getByTestId("editor-command"), { target: { value: "npx" } });
    await fireEvent.input(within(editor).getByTestId("editor-args"), { target: { value: "-y\n\npkg\n" } });
    host.failWith = {
      kind: "config",
      message: "not saved",
      fields: [
        { field: "name", message: "a server name may contain only letters, digits, `-`, `_` and `.`" },
        { field: "mcpServers.other.url", message: "must be an http:// or https:// URL" },
      ],
    } as never;
    await fireEvent.click(within(editor).getByTestId("editor-save"));
    await tick();
    expect(host.serverAdd).toHaveBeenCalledWith(form("a b", { args: ["-y", "pkg"] }));
    expect(screen.getByTestId("error-name").textContent).toContain("only letters, digits");
    expect(screen.getByTestId("editor-error").textContent).toContain("mcpServers.other.url: must be");

    host.failWith = null;
    await fireEvent.input(within(editor).getByTestId("editor-name"), { target: { value: "ab" } });
    await fireEvent.click(within(editor).getByTestId("editor-save"));
    await tick();
    expect(screen.queryByTestId("editor-dialog")).toBeNull();
  });

  test("a configured server's detail offers Edit (masked values as they came) and Remove after a confirmation", async () => {
    const host = new FakeHost([view("a")]);
    host.config = {
      path: CONFIG,
      mode: "config",
      servers: [form("a", { env: [{ key: "TOKEN", value: "***" }] })],
      problem: null,
    };
    await app(host, "a");
    await fireEvent.click(await screen.findByTestId("edit-server"));
    const editor = screen.getByTestId("editor-dialog");
    expect(within(editor).getByText("Edit a")).toBeTruthy();
    expect((within(editor).getByTestId("env-value") as HTMLInputElement).value).toBe("***");
    await fireEvent.click(within(editor).getByTestId("editor-save"));
    await tick();
    expect(host.serverEdit).toHaveBeenCalledWith("a", form("a", { env: [{ key: "TOKEN", value: "***" }] }));

    await fireEvent.click(screen.getByTestId("remove-server"));
    expect(host.serverRemove).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId("confirm-remove"));
    expect(host.serverRemove).toHaveBeenCalledWith("a");
  });

  test("a typed header value moves to the keychain: stored, then ${keyring:NAME} in its place", async () => {
    const host = new FakeHost([view("gh")]);
    host.config = {
      path: CONFIG,
      mode: "config",
      servers: [form("gh", { transport: "http", command: "", url: "https://h.example/mcp", headers: [{ key: "Authorization", value: "***" }] })],
      problem: null,
    };
    await app(host, "gh");
    await fireEvent.click(await screen.findByTestId("edit-server"));
    const editor = screen.getByTestId("editor-dialog");
    // A masked value is not known to the UI, so it cannot be moved from here.
    expect(within(editor).queryByTestId("headers-to-keychain")).toBeNull();
    const value = within(editor).getByTestId("headers-value") as HTMLInputElement;
    await fireEvent.input(value, { target: { value: "Bearer tok-123" } });
    await fireEvent.click(within(editor).getByTestId("headers-to-keychain"));
    await waitFor(() => expect(value.value).toBe("${keyring:gh.Authorization}"));
    expect(host.secretSet).toHaveBeenCalledWith("gh.Authorization", "Bearer tok-123");
    expect(within(editor).queryByTestId("headers-to-keychain")).toBeNull();
    await fireEvent.click(within(editor).getByTestId("editor-save"));
    await tick();
    expect(host.serverEdit.mock.calls[0]?.[1].headers).toEqual([{ key: "Authorization", value: "${keyring:gh.Authorization}" }]);
  });

  test("a server that is not in the file (the demo's) has no Edit or Remove", async () => {
    const host = new FakeHost([view("a")]);
    await app(host, "a");
    expect(screen.getByTestId("detail")).toBeTruthy();
    expect(screen.queryByTestId("config-actions")).toBeNull();
  });
});

describe("the first-run import offer", () => {
  function demoHost() {
    const host = new FakeHost([view("healthy")]);
    host.info = info("demo", [{ kind: "demo", message: "demo" }]);
    host.config = { path: CONFIG, mode: "demo", servers: [], problem: null };
    host.detected = [
      {
        source: "claude_desktop",
        client: "Claude Desktop",
        path: "/home/ada/.config/Claude/claude_desktop_config.json",
        servers: [
          { name: "fs", transport: "stdio", conflict: null },
          { name: "mem", transport: "stdio", conflict: null },
        ],
        skipped: [],
        error: null,
      },
      { source: "cursor", client: "Cursor", path: "/home/ada/.cursor/mcp.json", servers: [{ name: "linear", transport: "http", conflict: null }], skipped: [], error: null },
    ];
    return host;
  }

  test("lists each client with its count; Import imports that one", async () => {
    const host = demoHost();
    await app(host);
    const offer = await screen.findByTestId("import-offer");
    const counts = (await within(offer).findAllByTestId("import-count")).map((c) => c.textContent);
    expect(counts).toEqual(["2 servers", "1 server"]);
    await fireEvent.click(within(offer).getByTestId("import-cursor"));
    expect(host.importApply).toHaveBeenCalledWith([{ source: "cursor" }]);
  });

  test("Keep the demo hides it; config mode never shows it", async () => {
    const host = demoHost();
    await app(host);
    await fireEvent.click(await screen.findByTestId("keep-demo"));
    expect(screen.queryByTestId("import-offer")).toBeNull();
  });

  test("leaving the demo (config_changed to config mode) removes the offer and the demo banner", async () => {
    const host = demoHost();
    await app(host);
    await screen.findByTestId("import-offer");
    expect(screen.getByTestId("banner-info")).toBeTruthy();
    host.configChanged(info("config"));
    await waitFor(() => expect(screen.queryByTestId("import-offer")).toBeNull());
    expect(screen.queryByTestId("banner-info")).toBeNull();
  });

  test("with a config of one's own, Import… opens the same offer on demand, and Close hides it", async () => {
    const host = demoHost();
    host.info = info("config");
    host.config = { path: CONFIG, mode: "config", servers: [], problem: null };
    await app(host);
    expect(screen.queryByTestId("import-offer")).toBeNull();
    await fireEvent.click(await screen.findByTestId("open-import"));
    const offer = await screen.findByTestId("import-offer");
    expect(offer.textContent).toMatch(/a name you already have is skipped and listed/);
    expect(within(offer).queryByTestId("keep-demo")).toBeNull();
    await fireEvent.click(within(offer).getByTestId("import-claude_desktop"));
    expect(host.importApply).toHaveBeenCalledWith([{ source: "claude_desktop" }]);
    await fireEvent.click(within(offer).getByTestId("close-import"));
    expect(screen.queryByTestId("import-offer")).toBeNull();
  });
});
