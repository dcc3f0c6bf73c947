// End-to-end: "Serve over HTTP" in headless Chromium against the mock host (its endpoint lives
// in the page, src/host/mock-serve.ts): the dialog opens on each server's URL, a token is made
// and shown once with the hosts' snippets.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mockApp } from "./mock-app.mjs";

const { open } = mockApp();

describe("serve over HTTP against the mock host", () => {
  test("the dialog lists each server's URL and makes a token", async () => {
    const { page, close } = await open();
    await page.getByTestId("open-serve").click();
    const dialog = page.getByTestId("serve-dialog");
    await dialog.waitFor();
    const first = dialog.getByTestId("serve-url").first();
    await first.waitFor();
    assert.match(await first.innerText(), /^http:\/\/127\.0\.0\.1:7424\/servers\/[^/]+\/mcp$/);

    await dialog.getByTestId("serve-client").fill("vscode");
    await dialog.getByTestId("serve-token-add").click();
    const usage = dialog.getByTestId("serve-usage");
    await usage.waitFor();
    assert.match(await usage.innerText(), /Authorization: Bearer lifeline_/);
    assert.equal(await dialog.locator('[data-testid=serve-token][data-client="vscode"]').count(), 1);

    await dialog.getByTestId("serve-close").click();
    assert.equal(await page.getByTestId("serve-dialog").count(), 0);
    await close();
  });
});
