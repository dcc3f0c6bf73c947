// End-to-end: the toolbar's dialogs (Add a server, Export diagnostics, Connect a client, Serve
// over HTTP, Profiles) share one shell (src/components/Dialog.svelte). In headless Chromium, with the
// browser's own Tab order: focus moves into the dialog, Tab and Shift+Tab never leave it,
// Escape closes it, and focus goes back to the button that opened it.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mockApp } from "./mock-app.mjs";

const { open } = mockApp();

/** @typedef {import("playwright-core").Page} Page */

/** Where focus is: inside the open dialog, on the opener, or elsewhere (its test id or tag). @param {Page} page */
function whereFocus(page) {
  return page.evaluate(() => {
    const at = document.activeElement;
    const box = document.querySelector('[role="dialog"]');
    if (box && box.contains(at)) return "inside";
    return at?.getAttribute("data-testid") ?? at?.tagName ?? "none";
  });
}

describe("the dialog shell against the mock host", () => {
  /** @type {[opener: string, name: string, title: string, ready: string][]} */
  const dialogs = [
    ["add-server", "editor", "Add a server", "editor-name"],
    ["export-diagnostics", "bundle", "Export diagnostics", "bundle-files"],
    ["open-clients", "clients", "Connect a client", "client"],
    ["open-serve", "serve", "Serve over HTTP", "serve-enabled"],
    ["open-profiles", "profiles", "Profiles", "profile"],
  ];
  for (const [opener, name, title, ready] of dialogs) {
    test(`${title}: focus in, Tab stays inside, Escape closes, focus back`, async () => {
      const { page, close } = await open();
      await page.getByTestId(opener).focus();
      await page.keyboard.press("Enter");
      const dialog = page.getByRole("dialog", { name: title });
      await dialog.getByTestId(ready).first().waitFor();
      assert.equal(await dialog.getAttribute("data-testid"), `${name}-dialog`);
      assert.equal(await dialog.getAttribute("aria-modal"), "true");
      assert.equal(await whereFocus(page), "inside");
      if (name === "editor") {
        // Its autofocus field keeps the focus the shell would otherwise give the box.
        assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "editor-name");
      }

      const stops = await dialog
        .locator("a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex='0']")
        .count();
      assert.ok(stops >= 2, `${title} has ${stops} focusable controls`);
      for (let i = 0; i < stops + 2; i++) {
        await page.keyboard.press("Tab");
        assert.equal(await whereFocus(page), "inside", `Tab ${i + 1} of ${stops + 2} left ${title}`);
      }
      await dialog.getByTestId(`${name}-close`).focus();
      await page.keyboard.press("Shift+Tab");
      assert.equal(await whereFocus(page), "inside", `Shift+Tab from Close left ${title}`);
      await page.keyboard.press("Tab");
      assert.equal(
        await page.evaluate(() => document.activeElement?.getAttribute("data-testid")),
        `${name}-close`,
        "Tab from the last control comes back to Close",
      );

      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "detached" });
      assert.equal(await whereFocus(page), opener);
      await close();
    });
  }
});
