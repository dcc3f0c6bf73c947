// End-to-end: the detail panel's tool tester and server internals in headless Chromium against
// the mock host, on Playwright's fake clock: a form from a recorded tool's inputSchema refuses
// a bad field, a long call shows its progress and is cancelled, and the stderr of two
// generations, the resolved command and the masked config are shown; a server that needs an
// OAuth sign-in is signed in (the pending state, then ready) and out again.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mockApp } from "./mock-app.mjs";

const { open } = mockApp();

/** The filesystem server's detail, open, with the fake clock installed; fails on any page error. */
async function openFilesystem() {
  const opened = await open("", { height: 900 });
  await opened.page.locator('[data-testid=server-row][data-server="filesystem"]').click();
  const detail = opened.page.getByTestId("detail");
  await detail.waitFor();
  return { ...opened, detail };
}

describe("the detail panel against the mock host", () => {
  test("the tester: a schema form refuses a bad field, then a call shows progress and is cancelled", async () => {
    const { page, detail, close } = await openFilesystem();
    // The recorded server is lifeline-fixture: its `progress` tool takes two integers.
    await detail.getByTestId("tool-progress").click();
    const tester = detail.getByTestId("tool-tester");
    await tester.waitFor();
    assert.match(await detail.getByTestId("tool-def").innerText(), /Sends `steps` progress notifications/);

    await tester.getByTestId("field-steps").locator("input").fill("2.5");
    await tester.getByTestId("field-interval_ms").locator("input").fill("400");
    await tester.getByTestId("tester-run").click();
    assert.equal(await tester.getByTestId("field-steps").getByTestId("field-error").innerText(), "Must be a whole number");

    await tester.getByTestId("field-steps").locator("input").fill("5");
    await tester.getByTestId("tester-run").click();
    const progress = tester.getByTestId("tester-progress");
    await progress.waitFor();
    await page.clock.runFor(1_000);
    await page.waitForFunction(() => document.querySelector("[data-testid=tester-progress]")?.textContent?.includes("2 of 5"));
    assert.match(await progress.innerText(), /2 of 5/);

    await tester.getByTestId("tester-cancel").click();
    const error = tester.getByTestId("tester-error");
    await error.waitFor();
    assert.match(await error.innerText(), /Cancelled/);
    assert.match(await tester.getByTestId("tester-outcome").innerText(), /notifications\/cancelled/);
    assert.equal(await progress.count(), 0);

    await tester.getByTestId("tester-run").click();
    await page.clock.runFor(2_500);
    await tester.getByTestId("tester-result").waitFor();
    assert.match(await tester.getByTestId("tester-result").innerText(), /OK/);
    assert.match(await tester.getByTestId("tester-outcome").innerText(), /done after 5 steps/);
    await close();
  });

  test("the Hosts section: the recorded host and the hour's calls by tool", async () => {
    const { detail, close } = await openFilesystem();
    const hosts = detail.getByTestId("hosts");
    await hosts.getByTestId("host").waitFor();
    assert.match(await hosts.getByTestId("host").innerText(), /Claude Desktop[\s\S]*1\.2\.0[\s\S]*through the app · MCP 2025-06-18/);
    assert.equal(await hosts.getByTestId("hosts-live").textContent(), "1 attached · 0 in flight");
    const rows = await hosts.getByTestId("host-tool").allInnerTexts();
    assert.equal(rows.length, 3);
    assert.match(rows[0] ?? "", /echo\s+3\s+0\s+5 ms\s+6 ms/);
    assert.match(rows[2] ?? "", /fail\s+1\s+1\s+41 ms\s+41 ms/);
    await close();
  });

  test("stderr of the current and the previous generation, the resolved command, the masked config", async () => {
    const { detail, close } = await openFilesystem();
    const gens = detail.getByTestId("stderr-gen");
    await gens.first().waitFor();
    assert.deepEqual(await gens.evaluateAll((gs) => gs.map((g) => /** @type {HTMLElement} */ (g).dataset.generation)), ["2", "1"]);
    assert.match(await gens.nth(0).innerText(), /gen 2\s*current/);
    assert.match(await gens.nth(1).innerText(), /gen 1\s*previous/);
    assert.equal(await detail.getByTestId("command-program").innerText(), "/usr/local/bin/npx");
    assert.match(await detail.getByTestId("command").innerText(), /--token=\*\*\*/);
    assert.match(await detail.getByTestId("config").innerText(), /"FS_API_TOKEN": "\*\*\*"/);
    await close();
  });

  test("Sign in: pending while the browser flow runs, then signed in and ready; Sign out asks first", async () => {
    const { page, close } = await open("&signin=linear", { height: 900 });
    const row = page.locator('[data-testid=server-row][data-server="linear"]');
    await row.getByTestId("row-sign-in").waitFor();
    await row.click();
    const detail = page.getByTestId("detail");
    await detail.waitFor();
    assert.match(await detail.getByTestId("cause-advice").innerText(), /^Sign in/);
    assert.equal(await detail.getByTestId("auth-summary").innerText(), "Sign-in needed");

    await detail.getByTestId("detail-sign-in").click();
    await detail.getByTestId("auth-pending").waitFor();
    assert.equal(await detail.getByTestId("auth-pending").innerText(), "Waiting for you to finish signing in in your browser…");
    // With the detail open the row is narrow: its button keeps the key, and says why in its title.
    assert.equal(await row.getByTestId("row-sign-in").getAttribute("title"), "Waiting for you to finish signing in in your browser…");
    assert.equal(await row.getByTestId("row-sign-in").isDisabled(), true);

    await page.clock.runFor(2_500);
    await page.locator('[data-testid=server-row][data-server="linear"][data-state="ready"]').waitFor();
    assert.equal(await detail.getByTestId("auth-summary").innerText(), "Signed in");
    assert.equal(await detail.getByTestId("auth-issuer").innerText(), "https://auth.linear.example.com");
    assert.match(await detail.getByTestId("auth-expires").innerText(), /^in (59 m|1 h) \(2026-11-29 18:0\d:\d\d\)$/);
    assert.equal(await detail.getByTestId("auth-pending").count(), 0);
    assert.match(await page.getByTestId("activity").innerText(), /linear[\s\S]*signed in/);

    await detail.getByTestId("auth-sign-out").click();
    await detail.getByTestId("auth-confirm-sign-out").click();
    await page.locator('[data-testid=server-row][data-server="linear"][data-state="retired"]').waitFor();
    assert.equal(await detail.getByTestId("auth-summary").innerText(), "Sign-in needed");
    await row.getByTestId("row-sign-in").waitFor();
    await close();
  });
});
