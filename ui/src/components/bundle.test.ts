import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import { describe, expect, test } from "vitest";
import { MockHost } from "../host/mock";
import { bundleDialog, closeBundleDialog } from "../lib/bundle.svelte";
import { FakeHost } from "../test/fake-host";
import { failure, failureEvent, view } from "../test/fixtures";
import BundleDialog from "./BundleDialog.svelte";
import FailureDetails from "./FailureDetails.svelte";

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

describe("the mock host's bundle", () => {
  test("has the shell's layout, and the manifest lists every other file with its size and hash", async () => {
    const host = new MockHost();
    const preview = await host.bundlePreview();
    const paths = preview.files.map((f) => f.path);
    expect(paths[0]).toBe("manifest.json");
    expect(paths).toContain("config.redacted.json");
    expect(paths).toContain("logs/tail.log");
    expect(paths.some((p) => /^servers\/[^/]+\/events\.jsonl$/.test(p))).toBe(true);
    const manifest = JSON.parse(preview.files[0]!.content);
    expect(manifest.diagnostics_id).toBe(preview.diagnostics_id);
    expect(manifest.files).toHaveLength(preview.files.length - 1);
    for (const [i, entry] of manifest.files.entries()) {
      const f = preview.files[i + 1]!;
      expect(entry.path).toBe(f.path);
      expect(entry.size).toBe(new TextEncoder().encode(f.content).length);
      expect(entry.sha256).toBe(await sha256(f.content));
    }
    expect(host.calls.map((c) => c.command)).toEqual(["bundle_preview"]);
  });

  test("export needs a full path and says so, as the shell does", async () => {
    const host = new MockHost();
    await host.bundlePreview();
    await expect(host.bundleExport("d.zip")).rejects.toMatchObject({ kind: "config" });
    const done = await host.bundleExport("/tmp/d.zip");
    expect(done.path).toBe("/tmp/d.zip");
    expect(done.bytes).toBeGreaterThan(0);
  });
});

describe("BundleDialog", () => {
  test("lists the files, shows the chosen one's content, then saves to the path given", async () => {
    const host = new FakeHost([view("sqlite", { state: "retired", reason: "auth" })]);
    host.backlog.push(failureEvent(1, "sqlite", { kind: "auth", message: "POST /mcp answered 401" }));
    render(BundleDialog, { host, onclose: () => {} });
    const list = await screen.findByTestId("bundle-files");
    expect(list.querySelectorAll("button[data-path]").length).toBe(7);
    expect(screen.getByTestId("bundle-content").textContent).toContain('"format_version": 1');
    await fireEvent.click(list.querySelector<HTMLElement>('[data-path="servers/sqlite/failures.jsonl"]')!);
    expect(screen.getByTestId("bundle-content").textContent).toContain("POST /mcp answered 401");
    const path = screen.getByTestId<HTMLInputElement>("bundle-path");
    expect(path.value).toMatch(/lifeline-diagnostics-[0-9a-f]{16}\.zip$/);
    await fireEvent.input(path, { target: { value: "/tmp/out.zip" } });
    await fireEvent.click(screen.getByTestId("bundle-save"));
    await waitFor(() => expect(screen.getByTestId("bundle-saved").textContent).toContain("/tmp/out.zip"));
    expect(host.bundleExport).toHaveBeenCalledWith("/tmp/out.zip");
  });

  test("Save as… saves where the save dialog says, and nothing when it is cancelled", async () => {
    const host = new FakeHost([view("a")]);
    render(BundleDialog, { host, onclose: () => {} });
    await screen.findByTestId("bundle-files");
    const suggested = screen.getByTestId<HTMLInputElement>("bundle-path").value;
    host.chosenPath = null;
    await fireEvent.click(screen.getByTestId("bundle-save-as"));
    await waitFor(() => expect(host.chooseSavePath).toHaveBeenCalledWith(suggested));
    expect(host.bundleExport).not.toHaveBeenCalled();
    host.chosenPath = "/home/ada/Desktop/diag.zip";
    await fireEvent.click(screen.getByTestId("bundle-save-as"));
    await waitFor(() => expect(screen.getByTestId("bundle-saved").textContent).toContain("/home/ada/Desktop/diag.zip"));
    expect(host.bundleExport).toHaveBeenCalledWith("/home/ada/Desktop/diag.zip");
  });

  test("a failed save shows its kind and message and keeps the dialog open", async () => {
    const host = new FakeHost([view("a")]);
    host.failWith = { kind: "config", message: "the folder /nope does not exist; create it or choose another path" };
    render(BundleDialog, { host, onclose: () => {} });
    await screen.findByTestId("bundle-files");
    await fireEvent.click(screen.getByTestId("bundle-save"));
    const error = await screen.findByTestId("bundle-save-error");
    expect(error.textContent).toContain("config");
    expect(error.textContent).toContain("does not exist");
  });
});

test("every failure's details offer Export diagnostics", async () => {
  closeBundleDialog();
  render(FailureDetails, { failure: failure({ kind: "process_exit" }) });
  await fireEvent.click(screen.getByTestId("failure-export"));
  expect(bundleDialog.open).toBe(true);
  closeBundleDialog();
});
