// End-to-end: the tool pins' review in headless Chromium against the mock host, which replays the
// shell's recorded reviews and decisions (src/host/recorded/trust.json): a server's row says how
// many tools changed, its detail panel shows the change word by word with its flags, Approve takes
// one, Approve all the rest, and the row's badge goes.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { mockApp } from "./mock-app.mjs";

const { open } = mockApp();

describe("the review of held tools against the mock host", () => {
  test("the row says what changed; the panel shows it; Approve and Approve all clear it", async () => {
    const { page, close } = await open();
    const row = page.locator('[data-testid=server-row][data-server="filesystem"]');
    assert.equal((await row.getByTestId("row-held").textContent())?.trim(), "2 tools changed");
    await row.click();
    const trust = page.getByTestId("detail").getByTestId("trust");
    await trust.waitFor();
    assert.equal((await trust.getByTestId("trust-summary").textContent())?.trim(), "2 tools changed");
    const log = trust.locator('[data-testid=trust-held][data-tool="log"]');
    assert.match(await log.locator("ins").first().innerText(), /<IMPORTANT>/);
    assert.match(await log.getByTestId("trust-fields").innerText(), /inputSchema\.properties\.text\.type/);
    assert.match(await log.getByTestId("trust-flags").innerText(), /Instructions to the model/);
    // A held tool is not among the tools the clients see.
    assert.equal(await page.getByTestId("detail").getByTestId("tool-log").count(), 0);
    assert.equal(await page.getByTestId("detail").getByTestId("tool-add").count(), 1);

    await log.getByTestId("trust-approve").click();
    await trust.locator('[data-testid=trust-held][data-tool="log"]').waitFor({ state: "detached" });
    await page.waitForFunction(
      () => document.querySelector('[data-testid=server-row][data-server="filesystem"] [data-testid=row-held]')?.textContent?.trim() === "1 tool changed",
    );
    const approveAll = trust.getByTestId("trust-approve");
    await approveAll.click();
    await trust.waitFor({ state: "detached" });
    await row.getByTestId("row-held").waitFor({ state: "detached" });
    await close();
  });
});
