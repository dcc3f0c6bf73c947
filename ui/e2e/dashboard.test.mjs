// End-to-end: the built dashboard (ui/dist) in headless Debian Chromium against the mock host,
// served from 127.0.0.1. Time is Playwright's fake clock (from a fixed instant, in UTC), so the
// recorded story (src/host/recorded/scenario.json, what the real core did), the countdowns and the screenshots are the same on every run: the three PNGs in
// docs/screenshots are rewritten byte for byte unless the look changed. SCREENSHOTS_DIR (relative
// to ui/) sends them elsewhere.

import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { mockApp } from "./mock-app.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const SHOTS = resolve(HERE, "..", process.env.SCREENSHOTS_DIR ?? "../docs/screenshots");
const { open } = mockApp();

/** @typedef {import("playwright-core").Page} Page */

/** @param {Page} page @param {string} name */
const row = (page, name) => page.locator(`[data-testid=server-row][data-server="${name}"]`);
/** The server names of the rows, top to bottom. @param {Page} page */
const names = (page) =>
  page.getByTestId("server-row").evaluateAll((rs) => rs.map((r) => /** @type {HTMLElement} */ (r).dataset.server));
/** @param {Page} page @param {string} name */
const badge = (page, name) => row(page, name).getByTestId("state-badge");

describe("the dashboard against the mock host", () => {
  test("lists the four mock servers with the right badges", async () => {
    const { page, close } = await open();
    assert.deepEqual(await names(page), ["filesystem", "github", "linear", "sqlite"]);
    const expected = {
      filesystem: ["ready", "ready"],
      github: ["retrying", "retrying — attempt 2/10"],
      linear: ["retired", "retired — auth"],
      sqlite: ["quarantined", "quarantined — level 2"],
    };
    for (const [name, [state, text]] of Object.entries(expected)) {
      assert.equal(await badge(page, name).getAttribute("data-state"), state, name);
      assert.equal((await badge(page, name).innerText()).trim(), text, name);
    }
    assert.equal((await row(page, "filesystem").getByTestId("restarts").innerText()).trim(), "1 (2 h ago)");
    assert.match(await row(page, "sqlite").getByTestId("tools").innerText(), /10\s*stale/);
    assert.equal(await row(page, "sqlite").getByTestId("quarantine").getAttribute("data-level"), "2");
    await close();
  });

  test("a countdown decreases, with fixed-width digits", async () => {
    const { page, close } = await open();
    const countdown = row(page, "github").getByTestId("countdown");
    const before = Number(await countdown.getAttribute("data-ms"));
    const textBefore = await countdown.innerText();
    await page.clock.runFor(3_000);
    const after = Number(await countdown.getAttribute("data-ms"));
    assert.ok(before > 20_000 && before <= 30_000, `starts at 26 s, was ${before} ms`);
    assert.ok(before - after >= 2_000 && before - after <= 4_000, `3 s later: ${before} → ${after}`);
    assert.notEqual(await countdown.innerText(), textBefore);
    assert.match(await countdown.innerText(), /^retry in \d+ s$/);
    const numeric = await countdown.evaluate((el) => getComputedStyle(el).fontVariantNumeric);
    assert.match(numeric, /tabular-nums/);
    await close();
  });

  test("opening a detail shows the failure history, de-duplicated and expandable", async () => {
    const { page, close } = await open();
    await row(page, "sqlite").click();
    const detail = page.getByTestId("detail");
    await detail.waitFor();
    assert.equal(await detail.getAttribute("data-server"), "sqlite");
    const summaries = await detail.getByTestId("failure-summary").allInnerTexts();
    assert.deepEqual(summaries, ["exited with code 1 ×11 over 2 min", "exited with code 1"]);
    await detail.getByTestId("failure-group").first().locator("summary").click();
    const fields = detail.getByTestId("failure-group").first().getByTestId("failure-details");
    assert.match(await fields.innerText(), /process_exit/);
    assert.match(await fields.getByTestId("exit").innerText(), /exit code 1/);
    assert.match(await fields.getByTestId("failure-message").innerText(), /SQLITE_CORRUPT/);
    assert.match(await detail.getByTestId("timeline").innerText(), /quarantined — level 2/);
    await close();
  });

  test("Reconnect calls the host, and the row follows the new generation", async () => {
    const { page, close } = await open();
    await row(page, "linear").getByTestId("row-reconnect").click();
    const calls = await page.evaluate(() => /** @type {any} */ (window).__lifeline.host.calls);
    assert.deepEqual(calls, [{ command: "reconnect", server: "linear" }]);
    await page.clock.runFor(1_000);
    assert.equal((await badge(page, "linear").innerText()).trim(), "retired — auth");
    assert.equal((await row(page, "linear").locator("td.gen").innerText()).trim(), "2");
    // The row's button does not open the detail.
    assert.equal(await page.getByTestId("detail").count(), 0);

    await page.getByTestId("reconnect-all").click();
    const all = await page.evaluate(() =>
      /** @type {{ command: string, server?: string }[]} */ (/** @type {any} */ (window).__lifeline.host.calls).map(
        (c) => c.command + (c.server ? ` ${c.server}` : ""),
      ),
    );
    assert.deepEqual(all.slice(1), ["reconnect_all_failed", "reconnect linear", "reconnect sqlite"]);
    await page.getByTestId("banner-info").waitFor();
    await close();
  });

  test("keyboard: Tab reaches the rows, arrows move, Enter opens, Escape closes, focus is visible", async () => {
    const { page, close } = await open();
    let focused = "";
    for (let i = 0; i < 20 && focused !== "row"; i++) {
      await page.keyboard.press("Tab");
      focused = await page.evaluate(() => (document.activeElement?.matches("[data-testid=server-row]") ? "row" : ""));
    }
    assert.equal(focused, "row", "Tab reaches the first row");
    const active = () => page.evaluate(() => document.activeElement?.getAttribute("data-server"));
    assert.equal(await active(), "filesystem");
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement ?? document.body).outlineStyle);
    assert.notEqual(outline, "none", "the focused row shows a focus ring");

    await page.keyboard.press("ArrowDown");
    assert.equal(await active(), "github");
    await page.keyboard.press("Enter");
    assert.equal(await page.getByTestId("detail").getAttribute("data-server"), "github");
    assert.match(await page.getByTestId("cause").innerText(), /HTTP 429 Too Many Requests/);

    const focusedTestId = () => page.evaluate(() => document.activeElement?.getAttribute("data-testid"));
    await page.keyboard.press("Tab"); // the row's Reconnect button comes next
    assert.equal(await focusedTestId(), "row-reconnect");
    await page.keyboard.press("Shift+Tab");
    await page.keyboard.press("Enter"); // Enter on the open row moves into the detail's actions
    assert.equal(await focusedTestId(), "detail-reconnect");
    await page.keyboard.press("Escape");
    assert.equal(await page.getByTestId("detail").count(), 0);
    assert.equal(await active(), "github", "focus returns to the row");
    await close();
  });

  test("a failing command shows its kind and message in a banner", async () => {
    const { page, close } = await open("&fail=reset&select=sqlite");
    await page.getByTestId("detail-reset").click();
    const banner = page.getByTestId("banner-error");
    await banner.waitFor();
    assert.equal(await banner.getByTestId("banner-kind").innerText(), "supervisor_stopped");
    assert.match(await banner.innerText(), /Reset sqlite failed/);
    await close();
  });

  test("?mock&notice=demo: the app's demo notice is a calm, dismissible banner", async () => {
    const { page, close } = await open("&notice=demo");
    const banner = page.locator("[data-testid=banner-info][data-notice=demo]");
    await banner.waitFor();
    assert.equal(await banner.getAttribute("role"), "status");
    assert.match(
      (await banner.innerText()).replace(/\s+/g, " "),
      /Demo mode\s*These are built-in fixture servers that show each way a connection fails\. Add your own with “\+ Add server”, or import another client's servers; they are saved to \/home\/ada\/\.config\/lifeline\/config\.json\./,
    );
    assert.equal(await page.getByTestId("banner-error").count(), 0);
    await banner.getByLabel("Dismiss").click();
    await banner.waitFor({ state: "detached" });
    const calls = await page.evaluate(() => /** @type {any} */ (window).__lifeline.host.calls);
    assert.deepEqual(calls, [], "app_info is not a server command");
    await close();
  });

  test("filter and severity sort", async () => {
    const { page, close } = await open();
    await page.getByTestId("filter").fill("stdio");
    assert.deepEqual(
      await names(page),
      ["filesystem", "sqlite"],
    );
    await page.getByTestId("filter").fill("");
    await page.getByTestId("sort-severity").click();
    assert.deepEqual(
      await names(page),
      ["linear", "sqlite", "github", "filesystem"],
    );
    await close();
  });

  test("100 servers: every row renders and the list scrolls", async () => {
    const { page, close } = await open("&servers=100");
    assert.equal(await page.getByTestId("server-row").count(), 100);
    const scrolled = await page.evaluate(() => {
      const el = /** @type {HTMLElement} */ (document.querySelector(".scroll"));
      el.scrollTop = el.scrollHeight;
      return el.scrollTop > 0;
    });
    assert.ok(scrolled);
    await page.clock.runFor(2_000);
    await close();
  });

  test("theme toggle pins dark and light", async () => {
    const { page, close } = await open();
    const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await bg();
    await page.getByTestId("theme-dark").click();
    assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), "dark");
    assert.notEqual(await bg(), light);
    await page.getByTestId("theme-system").click();
    assert.equal(await bg(), light);
    await close();
  });

  for (const scheme of /** @type {const} */ (["light", "dark"])) {
    test(`screenshot, ${scheme}, 1280×800`, async () => {
      const { page, close } = await open("&select=sqlite", { colorScheme: scheme, paused: true });
      await page.clock.runFor(2_000);
      mkdirSync(SHOTS, { recursive: true });
      const file = join(SHOTS, `dashboard-${scheme}.png`);
      await page.screenshot({ path: file, animations: "disabled", caret: "hide" });
      assert.ok(existsSync(file));
      await close();
    });
  }

  test("screenshot, a remote server that needs a sign-in, 1280×800", async () => {
    const { page, close } = await open("&signin=linear&select=linear", { colorScheme: "light", paused: true });
    await page.clock.runFor(2_000);
    await page.getByTestId("detail-sign-in").waitFor();
    mkdirSync(SHOTS, { recursive: true });
    const file = join(SHOTS, "sign-in-light.png");
    await page.screenshot({ path: file, animations: "disabled", caret: "hide" });
    assert.ok(existsSync(file));
    await close();
  });
});
