// End-to-end: "Export diagnostics" in headless Chromium against the mock host, from the
// toolbar and from a failure's details: the preview lists the files, shows each one's
// content, and a save reports where and how big (or the error, for a relative path).

import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { mockApp } from "./mock-app.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const SHOTS = resolve(HERE, "..", process.env.SCREENSHOTS_DIR ?? "../docs/screenshots");
const { open } = mockApp();

describe("Export diagnostics against the mock host", () => {
  test("from the toolbar: preview every file, read one, save it", async () => {
    const { page, close } = await open();
    await page.getByTestId("export-diagnostics").click();
    const dialog = page.getByTestId("bundle-dialog");
    const files = dialog.getByTestId("bundle-files");
    await files.waitFor();
    const paths = await files.locator("button[data-path]").evaluateAll((bs) => bs.map((b) => b.getAttribute("data-path")));
    assert.equal(paths[0], "manifest.json");
    assert.ok(paths.includes("config.redacted.json"), String(paths));
    assert.ok(paths.includes("logs/tail.log"), String(paths));
    assert.match(await dialog.getByTestId("bundle-content").innerText(), /"format_version": 1/);
    await files.locator('[data-path="config.redacted.json"]').click();
    assert.match(await dialog.getByTestId("bundle-content").innerText(), /"Authorization": "\*\*\*"/);
    if (process.env.SCREENSHOTS_DIR) await page.screenshot({ path: join(SHOTS, "export-diagnostics.png") });

    const path = dialog.getByTestId("bundle-path");
    assert.match(await path.inputValue(), /^\/home\/ada\/Downloads\/lifeline-diagnostics-[0-9a-f]{16}\.zip$/);
    await path.fill("relative.zip");
    await dialog.getByTestId("bundle-save").click();
    assert.match(await dialog.getByTestId("bundle-save-error").innerText(), /config.*not a full path/s);
    await path.fill("/tmp/diagnostics.zip");
    await dialog.getByTestId("bundle-save").click();
    assert.match(await dialog.getByTestId("bundle-saved").innerText(), /Saved \/tmp\/diagnostics\.zip \(/);

    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "detached" });
    await close();
  });

  test("from a failure's details", async () => {
    const { page, close } = await open("&select=sqlite");
    const group = page.getByTestId("detail").getByTestId("failure-group").first();
    await group.locator("summary").click();
    await group.getByTestId("failure-export").click();
    await page.getByTestId("bundle-dialog").getByTestId("bundle-files").waitFor();
    await page.getByTestId("bundle-close").click();
    await page.getByTestId("bundle-dialog").waitFor({ state: "detached" });
    await close();
  });
});
