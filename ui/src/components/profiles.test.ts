// The Profiles view against a FakeHost holding the mock host's recorded views: each profile's
// count and tokens, who uses it, the switches (sent to the shell, following its answer), what a
// switch cannot do, search mode, and the over-limit warning.

import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { expect, test } from "vitest";
import { FakeHost } from "../test/fake-host";
import ProfilesDialog from "./ProfilesDialog.svelte";

async function dialog(host = new FakeHost([])) {
  render(ProfilesDialog, { host, onclose: () => {} });
  const d = within(await screen.findByTestId("profiles-dialog"));
  await d.findAllByTestId("profile");
  return { host, d };
}

const pick = (d: ReturnType<typeof within>, name: string) =>
  fireEvent.click(d.getAllByTestId("profile").find((p: HTMLElement) => p.dataset.profile === name)!);

const tool = (d: ReturnType<typeof within>, name: string) =>
  d.getAllByTestId("profile-tool").find((t: HTMLElement) => t.dataset.tool === name)!;

const toggle = (d: ReturnType<typeof within>, name: string) =>
  within(tool(d, name)).getByRole("switch") as HTMLInputElement;

test("lists each profile with its tool count and tokens; default is open", async () => {
  const { d } = await dialog();
  const profiles = d.getAllByTestId("profile");
  expect(profiles.map((p) => p.dataset.profile)).toEqual(["default", "coding", "everything"]);
  expect(d.getAllByTestId("profile-count").map((c) => c.textContent!.trim().split(" · ")[0])).toEqual([
    "20 tools",
    "8 tools",
    "3 tools",
  ]);
  expect(profiles[0]!.getAttribute("aria-current")).toBe("true");
  expect(d.getByTestId("profile-view").dataset.profile).toBe("default");
  expect(d.getByTestId("profile-no-tools").textContent).toContain("github, linear");
  expect(d.getAllByTestId("profile-server").map((s) => s.dataset.server)).toEqual(["filesystem", "sqlite"]);
  expect(within(tool(d, "echo")).getByText("filesystem__echo")).toBeTruthy();
  expect(d.getByTestId("profile-users").textContent).toContain("claude-code");
});

test("a switch asks the shell and follows its answer", async () => {
  const { host, d } = await dialog();
  expect(toggle(d, "echo").checked).toBe(true);
  await fireEvent.click(toggle(d, "echo"));
  expect(host.profileToolSet).toHaveBeenCalledWith("default", "filesystem", "echo", false);
  await waitFor(() => expect(toggle(d, "echo").checked).toBe(false));
  expect(tool(d, "echo").dataset.shown).toBe("false");
  expect(d.getAllByTestId("profile-count")[0]!.textContent).toContain("19 tools");
  expect(d.getByTestId("profile-summary").textContent).toMatch(/^19 tools, ≈ \d+ tokens$/);
  await fireEvent.click(toggle(d, "echo"));
  await waitFor(() => expect(toggle(d, "echo").checked).toBe(true));
});

test("a refused switch stays as it was and says why", async () => {
  const host = new FakeHost([]);
  const { d } = await dialog(host);
  host.profileToolSet.mockRejectedValueOnce({ kind: "config", message: "the file is not valid JSON" });
  await fireEvent.click(toggle(d, "add"));
  expect((await d.findByTestId("profiles-error")).textContent).toContain("the file is not valid JSON");
  expect(toggle(d, "add").checked).toBe(true);
});

test("who uses a profile, and a tool its switch cannot bring back", async () => {
  const { d } = await dialog();
  await pick(d, "coding");
  const users = d.getByTestId("profile-users").textContent!;
  expect(users).toContain("Cursor: mcpServers.lifeline in /home/ada/.cursor/mcp.json");
  expect(users).toContain("Attached through the app now: cursor-vscode 1.7.2");
  expect(users).toContain("HTTP token bound to it: cursor");
  const fixed = toggle(d, "list_changed");
  expect(fixed.disabled && !fixed.checked).toBe(true);
  const note = document.getElementById(fixed.getAttribute("aria-describedby")!)!;
  expect(note.textContent).toContain("`list_*`");
  expect(toggle(d, "crash").disabled).toBe(false);
});

test("names, counts and limits follow the host chosen; a client using the profile says so", async () => {
  const host = new FakeHost([]);
  const view = host.mockProfiles.view();
  // Cursor would be given one tool under another name, and is over its limit.
  const coding = view.profiles.find((p) => p.preview.profile === "coding")!;
  const cursor = coding.hosts.find((h) => h.client === "cursor")!;
  const first = coding.preview.tools.find((t) => t.shown)!;
  const why = "shortened: the whole name has 70 characters, over this host's 51";
  Object.assign(cursor, {
    listed: 41,
    over_limit: "41 tools is over the 40 cursor handles",
    renamed: [{ server: first.server, tool: first.tool, name: "cursor_name_abc123", changed: why }],
  });
  host.profilesGet.mockResolvedValueOnce(view);
  const { d } = await dialog(host);
  await pick(d, "coding");
  expect(d.getByTestId("profile-limits").textContent).toBe("Names of at most 46 characters; at most 40 tools");
  const select = d.getByTestId("profile-host") as HTMLSelectElement;
  const options = [...select.options].map((o) => o.textContent!.trim());
  expect(options[0]).toBe("Any host (the shortest names)");
  expect(options).toContain("Cursor (uses it)");
  expect(options).toContain("VS Code");
  await fireEvent.change(select, { target: { value: "cursor" } });
  expect(d.getByTestId("profile-limits").textContent).toBe(`Names of at most ${cursor.budget} characters; at most 40 tools`);
  expect(d.getByTestId("profile-summary").textContent).toMatch(/^41 tools, /);
  expect(d.getByTestId("profile-over-limit").textContent).toContain("40 cursor handles");
  expect(within(tool(d, first.tool)).getByText("cursor_name_abc123")).toBeTruthy();
  expect(within(tool(d, first.tool)).getByTestId("profile-tool-note").textContent).toBe(why);
  // The list follows the host too; back to any host, the shell's own names.
  expect(d.getAllByTestId("profile-over")).toHaveLength(1);
  await fireEvent.change(select, { target: { value: "unknown" } });
  expect(within(tool(d, first.tool)).queryByText("cursor_name_abc123")).toBeNull();
  expect(d.queryAllByTestId("profile-over")).toHaveLength(0);
});

test("in search mode the meta-tools' tokens stand against the full list's, and no switch works", async () => {
  const { d } = await dialog();
  await pick(d, "everything");
  expect(d.getByTestId("profile-summary").textContent).toMatch(/^search mode: 3 tools to find and call 20 tools, ≈ \d+ tokens instead of ≈ \d+ tokens$/);
  expect(d.getByTestId("profile-search").textContent).toContain("search mode");
  expect(d.getAllByRole("switch").every((s) => (s as HTMLInputElement).disabled)).toBe(true);
});

test("a profile over a host's tool limit is marked and warned of", async () => {
  const host = new FakeHost([]);
  const view = host.mockProfiles.view();
  const message = "60 tools is over the 40 unknown handles: it asks you to turn tools off";
  Object.assign(view.profiles[0]!.preview, { listed: 60, limit: 40, over_limit: message });
  host.profilesGet.mockResolvedValueOnce(view);
  const { d } = await dialog(host);
  expect(d.getAllByTestId("profile-over")).toHaveLength(1);
  expect(d.getByTestId("profile-over-limit").textContent).toBe(message);
  expect(d.getByRole("alert").textContent).toBe(message);
});
