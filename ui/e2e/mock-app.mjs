// The harness every e2e file shares: the built UI served from 127.0.0.1, one headless Chromium,
// and `open`, a fresh page of the UI against its mock host on Playwright's fake clock (from
// START, in UTC) that fails the test on any page error when closed.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before } from "node:test";
import { launch } from "./browser.mjs";
import { DIST, serve } from "./serve.mjs";

/** The fake clock starts here: a fixed wall time makes every run identical. */
export const START = new Date("2026-11-29T17:05:00.000Z");

/**
 * Registers the file's before/after hooks (serve ui/dist, launch Chromium; close both) and
 * returns `open`.
 */
export function mockApp() {
  /** @type {{ url: string, close: () => Promise<unknown> }} */
  let server;
  /** @type {Awaited<ReturnType<typeof launch>>} */
  let chromium;

  before(async () => {
    assert.ok(existsSync(join(DIST, "index.html")), `${DIST}/index.html is missing: run \`npm run build\` first`);
    server = await serve();
    chromium = await launch();
  });

  after(async () => {
    await chromium?.close();
    await server?.close();
  });

  /**
   * A fresh page at ?mock…, live. `paused`: the clock stands at START until the test moves it,
   * however long the page takes to load (a loaded machine would otherwise let it run past where
   * a screenshot is taken).
   * @param {string} query
   * @param {{ height?: number, colorScheme?: "light" | "dark", locale?: string, paused?: boolean }} options
   */
  async function open(query = "", { height = 800, colorScheme = "light", locale = "en-GB", paused = false } = {}) {
    const context = await chromium.browser.newContext({
      viewport: { width: 1280, height },
      colorScheme,
      timezoneId: "UTC",
      locale,
    });
    const page = await context.newPage();
    /** @type {string[]} */
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    if (paused) {
      await page.clock.install({ time: START.getTime() - 1_000 });
      await page.clock.pauseAt(START);
    } else {
      await page.clock.install({ time: START });
    }
    await page.goto(`${server.url}/index.html?mock${query}`);
    await page.locator('[data-testid=sync][data-sync="live"]').waitFor();
    return {
      page,
      errors,
      async close() {
        await context.close();
        assert.deepEqual(errors, [], "the page logged errors");
      },
    };
  }

  return { open };
}
