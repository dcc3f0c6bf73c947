// The "Connect a client" dialog against a FakeHost holding the mock host's client files:
// choose servers, the masked preview, apply, restore, and the "changed since" confirmation.

import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { expect, test } from "vitest";
import { FakeHost } from "../test/fake-host";
import ConnectClientDialog from "./ConnectClientDialog.svelte";

async function dialog() {
  const host = new FakeHost([]);
  render(ConnectClientDialog, { host, onclose: () => {} });
  const d = within(await screen.findByTestId("clients-dialog"));
  await d.findAllByTestId("client");
  return { host, d };
}

const server = (d: ReturnType<typeof within>, name: string) =>
  d.getAllByTestId("client-server").find((e: HTMLElement) => e.getAttribute("data-server") === name) as HTMLInputElement;

test("lists the clients; one not found cannot be chosen; servers through Lifeline are marked", async () => {
  const { d } = await dialog();
  const clients = d.getAllByTestId("client");
  expect(clients.map((c) => c.getAttribute("data-client"))).toEqual(["claude-desktop", "claude-code", "cursor", "vscode"]);
  expect((clients[3] as HTMLButtonElement).disabled).toBe(true);
  expect(clients[3]!.textContent).toContain("not found");
  // The first found client is open: its servers, one already through Lifeline.
  expect(server(d, "github").checked).toBe(false);
  expect(server(d, "filesystem").checked && server(d, "filesystem").disabled).toBe(true);
  expect(d.getByTestId("client-servers").textContent).toContain("through Lifeline");
  expect((d.getByTestId("clients-preview") as HTMLButtonElement).disabled).toBe(true);
});

test("preview shows the masked diff, apply writes, restore puts it back", async () => {
  const { host, d } = await dialog();
  await fireEvent.click(d.getAllByTestId("client").find((c) => c.getAttribute("data-client") === "cursor")!);
  await fireEvent.click(server(d, "linear"));
  expect((d.getByTestId("clients-apply") as HTMLButtonElement).disabled).toBe(true);
  await fireEvent.click(d.getByTestId("clients-preview"));
  const diff = await d.findByTestId("clients-diff");
  expect(diff.textContent).toContain('+      "args": ["connect", "linear"]');
  expect(diff.textContent).toContain('"Authorization": "***"');
  expect(host.clientsPreview).toHaveBeenCalledWith("cursor", ["linear"]);
  await fireEvent.click(d.getByTestId("clients-apply"));
  const done = await d.findByTestId("clients-done");
  // The backup is in Lifeline's data dir, never beside the client's file, and the message says where.
  const backup = "/home/ada/.local/share/lifeline/backups/cursor-1d2e3f4a5b6c7d8e-20261129T170500Z.json";
  expect(done.textContent).toContain(`backup ${backup}`);
  expect(done.textContent).not.toContain(".cursor/mcp.json.lifeline-backup");
  expect(done.textContent).toContain("Restart Cursor");
  await waitFor(() => expect(server(d, "linear").disabled).toBe(true));
  // The client's row names its backup's full path while it can be restored.
  expect((await d.findByTestId("clients-backup")).textContent).toContain(backup);
  await fireEvent.click(await d.findByTestId("clients-restore"));
  await waitFor(() => expect(d.getByTestId("clients-done").textContent).toContain("Restored /home/ada/.cursor/mcp.json"));
  expect(d.getByTestId("clients-done").textContent).toContain(`from ${backup}`);
  expect(host.clientsRestore).toHaveBeenCalledWith("cursor", false);
  await waitFor(() => expect(server(d, "linear").disabled).toBe(false));
  expect(d.queryByTestId("clients-backup")).toBeNull();
});

test("a file the client changed since asks before it is restored", async () => {
  const { host, d } = await dialog();
  await fireEvent.click(d.getAllByTestId("client").find((c) => c.getAttribute("data-client") === "claude-code")!);
  await fireEvent.click(server(d, "sqlite"));
  await fireEvent.click(d.getByTestId("clients-preview"));
  await d.findByTestId("clients-diff");
  await fireEvent.click(d.getByTestId("clients-apply"));
  await d.findByTestId("clients-done");
  await fireEvent.click(await d.findByTestId("clients-restore"));
  const confirm = await d.findByTestId("clients-confirm");
  expect(confirm.textContent).toContain("changed since Lifeline wrote it");
  expect(confirm.textContent).toContain("numStartups: changed since");
  expect(d.queryByTestId("clients-error")).toBeNull();
  await fireEvent.click(d.getByTestId("clients-restore-force"));
  await waitFor(() => expect(d.getByTestId("clients-done").textContent).toContain("Restored /home/ada/.claude.json"));
  expect(host.clientsRestore.mock.calls).toEqual([
    ["claude-code", false],
    ["claude-code", true],
  ]);
  expect(d.queryByTestId("clients-confirm")).toBeNull();
});
