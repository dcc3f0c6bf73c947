// End-to-end: the Profiles view in headless Chromium against the mock host, which replays the
// shell's recorded views and switches (src/host/recorded/profiles.json): each profile's tool count
// and tokens, who uses it, the names and limits of a host chosen, a tool switched off and on from the keyboard, and one a glob keeps out.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mockApp } from "./mock-app.mjs";

const { open } = mockApp();

/** @typedef {import("playwright-core").Locator} Locator */

/** Each profile's name and its list line, in order. @param {Locator} dialog */
async function counts(dialog) {
  const profiles = dialog.getByTestId("profile");
  const out = [];
  for (let i = 0; i < (await profiles.count()); i++) {
    const p = profiles.nth(i);
    out.push([await p.getAttribute("data-profile"), (await p.getByTestId("profile-count").innerText()).split(" · ")[0]]);
  }
  return out;
}

describe("the Profiles view against the mock host", () => {
  test("each profile's tools, tokens and clients; a switch off and on from the keyboard", async () => {
    const { page, close } = await open();
    await page.getByTestId("open-profiles").click();
    const dialog = page.getByRole("dialog", { name: "Profiles" });
    await dialog.getByTestId("profile").first().waitFor();
    assert.deepEqual(await counts(dialog), [
      ["default", "20 tools"],
      ["coding", "8 tools"],
      ["everything", "3 tools"],
    ]);
    const summary = dialog.getByTestId("profile-summary");
    assert.match(await summary.innerText(), /^20 tools, ≈ \d+ tokens$/);

    const echo = dialog.locator('[data-testid=profile-tool][data-tool="echo"]').first().getByRole("switch");
    assert.equal(await echo.isChecked(), true);
    await echo.focus();
    await page.keyboard.press("Space");
    await dialog.locator('[data-testid=profile-tool][data-tool="echo"][data-shown="false"]').waitFor();
    assert.equal(await echo.isChecked(), false);
    assert.match(await summary.innerText(), /^19 tools/);
    assert.deepEqual((await counts(dialog))[0], ["default", "19 tools"]);
    await page.keyboard.press("Space");
    await dialog.locator('[data-testid=profile-tool][data-tool="echo"][data-shown="true"]').first().waitFor();
    assert.match(await summary.innerText(), /^20 tools/);

    await dialog.locator('[data-testid=profile][data-profile="coding"]').click();
    const users = await dialog.getByTestId("profile-users").innerText();
    assert.match(users, /HTTP token bound to it: cursor/);
    assert.match(users, /Attached through the app now: cursor-vscode 1\.7\.2/);
    assert.match(users, /Cursor: mcpServers\.lifeline in \/home\/ada\/\.cursor\/mcp\.json/);
    const limits = dialog.getByTestId("profile-limits");
    assert.equal(await limits.innerText(), "Names of at most 46 characters; at most 40 tools");
    await dialog.getByTestId("profile-host").selectOption({ label: "VS Code" });
    assert.equal(await limits.innerText(), "Names of at most 46 characters; at most 128 tools");
    await dialog.getByTestId("profile-host").selectOption({ label: "Claude Code" });
    assert.equal(await limits.innerText(), "Names of at most 49 characters; no tool limit known");
    const fixed = dialog.locator('[data-testid=profile-tool][data-tool="list_changed"]');
    assert.equal(await fixed.getByRole("switch").isDisabled(), true);
    assert.match(await fixed.getByTestId("profile-tool-note").innerText(), /`list_\*`/);

    await dialog.locator('[data-testid=profile][data-profile="everything"]').click();
    assert.match(await summary.innerText(), /^search mode: 3 tools to find and call 20 tools/);
    await dialog.getByTestId("profiles-close").click();
    await dialog.waitFor({ state: "detached" });
    await close();
  });
});
