// End-to-end: earlier runs from the history (`?mock&history`) in headless Chromium. The feed
// starts with them under a "before this session" divider, a server's detail lists its earlier
// failures and calls, and none of it changes a server's live badge.

import assert from "node:assert/strict";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import { mockApp } from "./mock-app.mjs";

const { open } = mockApp();

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
