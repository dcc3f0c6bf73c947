// End-to-end: "Connect a client" in headless Chromium against the mock host (its client files
// live in the page, src/host/mock-clients.ts): choose a client's servers, read the masked diff,
// apply, restore; a file the client changed since asks before it is restored.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mockApp } from "./mock-app.mjs";

const { open } = mockApp();

describe("connect a client against the mock host", () => {
  test("preview, apply and restore Cursor; Claude Code's changed file asks first", async () => {
    const { page, close } = await open();
    await page.getByTestId("open-clients").click();
    const dialog = page.getByTestId("clients-dialog");
    await dialog.waitFor();
    assert.equal(await dialog.getByTestId("client").count(), 4);
    assert.equal(await dialog.locator('[data-client="vscode"]').isDisabled(), true);

    await dialog.locator('[data-testid=client][data-client="cursor"]').click();
    await dialog.locator('[data-testid=client-server][data-server="notes"]').check();
    await dialog.getByTestId("clients-preview").click();
    const diff = dialog.getByTestId("clients-diff");
    await diff.waitFor();
    assert.match(await diff.innerText(), /\+\s+"args": \["connect", "notes"\]/);
    await dialog.getByTestId("clients-apply").click();
    await dialog.getByTestId("clients-done").waitFor();
    assert.match(await dialog.getByTestId("clients-done").innerText(), /backup \/home\/ada\/\.local\/share\/lifeline\/backups\/cursor-/);
    assert.equal(await dialog.locator('[data-testid=client-server][data-server="notes"]').isDisabled(), true);
    await dialog.getByTestId("clients-restore").click();
    await page.waitForFunction(() =>
      document.querySelector("[data-testid=clients-done]")?.textContent?.startsWith("Restored /home/ada/.cursor/mcp.json"),
    );

    await dialog.locator('[data-testid=client][data-client="claude-code"]').click();
    await dialog.locator('[data-testid=client-server][data-server="sqlite"]').check();
    await dialog.getByTestId("clients-preview").click();
    await dialog.getByTestId("clients-diff").waitFor();
    await dialog.getByTestId("clients-apply").click();
    await dialog.getByTestId("clients-restore").click();
    const confirm = dialog.getByTestId("clients-confirm");
    await confirm.waitFor();
    assert.match(await confirm.innerText(), /changed since Lifeline wrote it/);
    await dialog.getByTestId("clients-restore-force").click();
    await page.waitForFunction(() =>
      document.querySelector("[data-testid=clients-done]")?.textContent?.startsWith("Restored /home/ada/.claude.json"),
    );
    await dialog.getByTestId("clients-close").click();
    assert.equal(await page.getByTestId("clients-dialog").count(), 0);
    await close();
  });
});
