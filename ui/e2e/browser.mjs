// Headless Debian Chromium through playwright-core (no browser download), with the flags this
// machine's closed network and root user need. Playwright gives every launch a fresh, empty
// profile of its own.

import { existsSync } from "node:fs";
import { chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export async function launch() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: apt-get install -y --no-install-recommends chromium (or set CHROMIUM_PATH)`,
    );
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-partial-raster",
      "--disable-lcd-text",
      "--force-color-profile=srgb",
      "--num-raster-threads=1",
    ],
  });
  return { browser, close: () => browser.close() };
}
