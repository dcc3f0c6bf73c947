// End-to-end: earlier runs from the history (`?mock&history`) in headless Chromium. The feed
// starts with them under a "before this session" divider, a server's detail lists its earlier
// failures and calls, and none of it changes a server's live badge.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { launch } from "./browser.mjs";
import { DIST, serve } from "./serve.mjs";

const START = new Date("2026-11-29T17:05:00.000Z");

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

/** A fresh page at ?mock…, fake clock from START in UTC, failing on any page error. @param {string} query */
async function open(query) {
  const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 800 }, timezoneId: "UTC", locale: "en-GB" });
  const page = await context.newPage();
  /** @type {string[]} */
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.clock.install({ time: START });
  await page.goto(`${server.url}/index.html?mock${query}`);
  await page.locator('[data-testid=sync][data-sync="live"]').waitFor();
  return {
    page,
    async close() {
      await context.close();
      assert.deepEqual(errors, [], "the page logged errors");
    },
  };
}

describe("history of earlier runs against the mock host", () => {
  test("the feed ends with earlier runs under dividers; the live badges are this session's", async () => {
    const { page, close } = await open("&history");
    const feed = page.getByTestId("activity");
    const dividers = feed.getByTestId("activity-divider");
    await dividers.first().waitFor();
    assert.deepEqual(await dividers.allTextContents(), [
      "Before this session · run started Sat 28 Nov, 17:05",
      "Before this session · run started Fri 27 Nov, 17:05",
    ]);
    const past = await feed.getByTestId("activity-past").allTextContents();
    assert.ok(past.some((t) => t.includes("sqlite") && t.includes("exited with code 1")), past.join("\n"));
    // The earlier run ended with every server `stopping`; the rows show this session's states.
    const states = await page.locator("[data-testid=server-row] [data-testid=state-badge]").evaluateAll((bs) =>
      bs.map((b) => /** @type {HTMLElement} */ (b).dataset.state),
    );
    assert.deepEqual(states.length, 4);
    assert.ok(!states.includes("stopping"), states.join(","));
    assert.equal(states[2], "retired", "linear, retired in this session");
    // This session's lines come before the first divider.
    const order = await feed.locator("li").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-testid") ?? "live"));
    assert.ok(order.indexOf("live") < order.indexOf("activity-divider"), order.join(","));
    await close();
  });

  test("a server's detail lists its failures and calls from earlier runs", async () => {
    const { page, close } = await open("&history&select=sqlite");
    const past = page.getByTestId("past-runs");
    await past.getByTestId("past-call").first().waitFor();
    assert.deepEqual(await past.getByTestId("past-failure").count(), 1);
    const calls = await past.getByTestId("past-call").allTextContents();
    assert.equal(calls.length, 2);
    assert.match(calls[1] ?? "", /query\s+error \(timeout\)\s+1 min/);
    await close();
  });

  test("without history the feed has no divider and the detail says nothing was recorded", async () => {
    const { page, close } = await open("&select=linear");
    await page.getByTestId("past-runs").getByText("Nothing recorded for linear before this session.").waitFor();
    assert.equal(await page.getByTestId("activity-divider").count(), 0);
    await close();
  });
});
