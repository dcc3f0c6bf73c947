// The "Serve over HTTP" dialog against a FakeHost holding the mock host's endpoint: the URL
// per server, turning it off and on (the setting sent to the shell), tokens listed by name,
// made (the token and the hosts' snippets shown once) and removed.

import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { expect, test } from "vitest";
import { FakeHost } from "../test/fake-host";
import ServeDialog from "./ServeDialog.svelte";

async function dialog() {
  const host = new FakeHost([]);
  render(ServeDialog, { host, servers: ["github", "notes"], onclose: () => {} });
  const d = within(await screen.findByTestId("serve-dialog"));
  await d.findByTestId("serve-status");
  return { host, d };
}

test("shows each server's URL while the endpoint is on", async () => {
  const { d } = await dialog();
  const urls = d.getAllByTestId("serve-url").map((e) => e.textContent);
  expect(urls).toEqual(["http://127.0.0.1:7424/servers/github/mcp", "http://127.0.0.1:7424/servers/notes/mcp"]);
  expect(d.getByTestId("serve-status").textContent).toContain("listening on 127.0.0.1:7424");
  expect((d.getByTestId("serve-apply") as HTMLButtonElement).disabled).toBe(true);
});

test("the switch and the port are written through gateway_set and applied", async () => {
  const { host, d } = await dialog();
  await fireEvent.click(d.getByTestId("serve-enabled"));
  await fireEvent.click(d.getByTestId("serve-apply"));
  await waitFor(() => expect(d.getByTestId("serve-status").textContent).toContain("Off"));
  expect(host.gatewaySet).toHaveBeenCalledWith(false, 7424);
  expect(d.queryByTestId("serve-urls")).toBeNull();

  await fireEvent.click(d.getByTestId("serve-enabled"));
  await fireEvent.input(d.getByTestId("serve-port"), { target: { value: "8123" } });
  await fireEvent.click(d.getByTestId("serve-apply"));
  await waitFor(() => expect(d.getByTestId("serve-status").textContent).toContain("127.0.0.1:8123"));
  expect(host.gatewaySet).toHaveBeenLastCalledWith(true, 8123);
  expect(d.getAllByTestId("serve-url")[0]!.textContent).toBe("http://127.0.0.1:8123/servers/github/mcp");
});

test("a token is shown once with the snippets; the list holds names only", async () => {
  const { host, d } = await dialog();
  expect(d.getAllByTestId("serve-token").map((e) => e.getAttribute("data-client"))).toEqual(["claude-code"]);
  await fireEvent.input(d.getByTestId("serve-client"), { target: { value: "cursor" } });
  await fireEvent.click(d.getByTestId("serve-token-add"));
  const usage = await d.findByTestId("serve-usage");
  const token = (await host.gatewayTokenAdd.mock.results[0]!.value).token as string;
  expect(usage.textContent).toContain(`Authorization: Bearer ${token}`);
  expect(usage.textContent).toContain("claude mcp add --transport http NAME http://127.0.0.1:7424/servers/NAME/mcp");
  expect(usage.textContent).toContain('VS Code (.vscode/mcp.json, under "servers")');
  await waitFor(() => expect(d.getAllByTestId("serve-token")).toHaveLength(2));
  expect(d.getByTestId("serve-tokens").textContent).not.toContain(token);

  const cursor = d.getAllByTestId("serve-token").find((e) => e.getAttribute("data-client") === "cursor")!;
  await fireEvent.click(within(cursor).getByTestId("serve-token-remove"));
  await waitFor(() => expect(d.getAllByTestId("serve-token")).toHaveLength(1));
  expect(host.gatewayTokenRemove).toHaveBeenCalledWith("cursor");
  // The token of a removed client is no longer shown.
  expect(d.queryByTestId("serve-made")).toBeNull();
});

test("a bad client name is refused with the reason", async () => {
  const { d } = await dialog();
  await fireEvent.input(d.getByTestId("serve-client"), { target: { value: "no spaces" } });
  await fireEvent.click(d.getByTestId("serve-token-add"));
  const error = await d.findByTestId("serve-error");
  expect(error.textContent).toContain("is not a client name");
  expect(d.queryByTestId("serve-made")).toBeNull();
});

test("a port another program holds is said in the dialog, with what to change", async () => {
  const { host, d } = await dialog();
  expect(d.queryByTestId("serve-endpoint-error")).toBeNull();
  await fireEvent.input(d.getByTestId("serve-port"), { target: { value: "8080" } });
  await fireEvent.click(d.getByTestId("serve-apply"));
  const error = await d.findByTestId("serve-endpoint-error");
  expect(host.gatewaySet).toHaveBeenLastCalledWith(true, 8080);
  expect(error.getAttribute("data-kind")).toBe("port_in_use");
  expect(error.textContent).toContain("port 127.0.0.1:8080 is in use by another program");
  expect(error.textContent).toContain("`lifeline.serve.port`");
  expect(d.getByTestId("serve-status").textContent).toContain("not listening");
  expect(d.queryByTestId("serve-urls")).toBeNull();
});
