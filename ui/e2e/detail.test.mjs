// End-to-end: the detail panel's tool tester and server internals in headless Chromium against
// the mock host, on Playwright's fake clock: a form from a recorded tool's inputSchema refuses
// a bad field, a long call shows its progress and is cancelled, and the stderr of two
// generations, the resolved command and the masked config are shown.

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

  test("the Hosts section: the attached host, its live call, the hour's calls by tool", async () => {
    const { detail, close } = await openFilesystem();
    const hosts = detail.getByTestId("hosts");
    await hosts.getByTestId("host").waitFor();
    assert.match(await hosts.getByTestId("host").innerText(), /claude-ai[\s\S]*0\.14\.10[\s\S]*through the app · MCP 2025-06-18/);
    assert.equal(await hosts.getByTestId("hosts-live").textContent(), "1 attached · 1 in flight");
    const rows = await hosts.getByTestId("host-tool").allInnerTexts();
    assert.equal(rows.length, 3);
    assert.match(rows[0] ?? "", /read_file\s+214\s+2\s+3 ms\s+18 ms/);
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
});
