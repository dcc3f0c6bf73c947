// End-to-end: editing the config and the first-run import, in headless Chromium against the
// mock host (its config lives in the page; every edit is answered as the shell recorded it,
// src/host/recorded/config.json). The built dashboard (ui/dist) is served from 127.0.0.1.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mockApp } from "./mock-app.mjs";

const { open } = mockApp();

/** @typedef {import("playwright-core").Page} Page */

/** @param {Page} page @param {string} name */
const row = (page, name) => page.locator(`[data-testid=server-row][data-server="${name}"]`);
/** @param {Page} page */
const names = (page) =>
  page.getByTestId("server-row").evaluateAll((rs) => rs.map((r) => /** @type {HTMLElement} */ (r).dataset.server));

/** Resolves once the rows are exactly `expected`, in any order (the list sorts by severity). @param {Page} page @param {string[]} expected */
async function rowsAre(page, expected) {
  const want = [...expected].sort();
  await page.waitForFunction(
    (w) =>
      JSON.stringify(
        [...document.querySelectorAll("[data-testid=server-row]")].map((r) => /** @type {HTMLElement} */ (r).dataset.server).sort(),
      ) === JSON.stringify(w),
    want,
  );
  assert.deepEqual((await names(page)).sort(), want);
}

describe("config editing against the mock host", () => {
  test("add (a refused one first), edit and remove a server", async () => {
    const { page, close } = await open();
    await page.getByTestId("add-server").click();
    const editor = page.getByTestId("editor-dialog");
    await editor.getByTestId("editor-name").fill("notes");
    await editor.getByTestId("editor-transport-http").check();
    await editor.getByTestId("editor-url").fill("ftp://127.0.0.1/mcp");
    await editor.getByTestId("editor-save").click();
    assert.equal(await editor.getByTestId("error-url").innerText(), "must be an http:// or https:// URL, not ftp:");

    await editor.getByTestId("editor-transport-stdio").check();
    await editor.getByTestId("editor-command").fill("notes-mcp");
    await editor.getByTestId("editor-args").fill("--root\n/home/ada/notes");
    await editor.getByTestId("env-add").click();
    await editor.getByTestId("env-key").fill("NOTES_TOKEN");
    await editor.getByTestId("env-value").fill("s3cret-notes");
    await editor.getByTestId("editor-save").click();
    await editor.waitFor({ state: "detached" });
    await rowsAre(page, ["filesystem", "github", "linear", "sqlite", "notes"]);

    await row(page, "notes").click();
    await page.getByTestId("edit-server").click();
    assert.equal(await editor.getByTestId("editor-command").inputValue(), "notes-mcp");
    assert.equal(await editor.getByTestId("env-value").inputValue(), "***", "the secret comes back masked");
    await editor.getByTestId("editor-disabled").check();
    await editor.getByTestId("editor-save").click();
    await editor.waitFor({ state: "detached" });
    const badge = row(page, "notes").getByTestId("state-badge");
    await page.waitForFunction(() => document.querySelector('[data-server="notes"] [data-testid=state-badge]')?.getAttribute("data-state") === "disabled");
    assert.equal(await badge.getAttribute("data-state"), "disabled");
    const stored = await page.evaluate(() => JSON.stringify(/** @type {any} */ (window).__lifeline.host.stored));
    assert.match(stored, /s3cret-notes/, "the masked value sent back kept the stored secret");

    await page.getByTestId("remove-server").click();
    await page.getByTestId("confirm-remove").click();
    await rowsAre(page, ["filesystem", "github", "linear", "sqlite"]);
    await close();
  });

  test("first run: the import offer lists the clients found; Import ends the demo", async () => {
    const { page, close } = await open("&notice=demo");
    const offer = page.getByTestId("import-offer");
    await offer.getByTestId("import-count").first().waitFor();
    assert.deepEqual(await offer.getByTestId("import-count").allInnerTexts(), ["3 servers", "1 server"]);
    assert.equal(await page.getByTestId("banner-info").count(), 1, "the demo banner");

    await offer.getByTestId("import-claude_desktop").click();
    await rowsAre(page, ["filesystem", "memory", "brave-search"]);
    await offer.waitFor({ state: "detached" });
    assert.match(await page.getByTestId("banner-info").innerText(), /Added 3 servers: filesystem, memory, brave-search/);
    await close();
  });

  test("Keep the demo hides the offer and keeps the demo's servers", async () => {
    const { page, close } = await open("&notice=demo");
    await page.getByTestId("keep-demo").click();
    await page.getByTestId("import-offer").waitFor({ state: "detached" });
    assert.deepEqual((await names(page)).sort(), ["filesystem", "github", "linear", "sqlite"]);
    await close();
  });
});
