// A TypeScript SDK host through `lifeline connect NAME` in front of a fixture that changes
// `echo`'s description after one call (tests/tests/it/gateway/trust.rs, issue 28).
//
//   node trust_host.mjs LIFELINE CONFIG NAME
//
// Prints one JSON line once the change is held ({step: "held", ...}), waits for a line on
// stdin (the test has run `lifeline tools approve`), then prints {step: "approved", ...}
// once it was told the list changed, and exits. Every wait is bounded.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createInterface } from "node:readline";

const [lifeline, config, name] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: lifeline,
  args: ["connect", name, "--config", config, "--no-attach"],
  env: {
    ...getDefaultEnvironment(),
    ...(process.env.LIFELINE_HISTORY ? { LIFELINE_HISTORY: process.env.LIFELINE_HISTORY } : {}),
  },
  stderr: "inherit",
});
const client = new Client({ name: "lifeline-trust-test-host", version: "1.0.0" }, { capabilities: {} });

let told = 0;
const waiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
  told += 1;
  waiters.splice(0).forEach((w) => w());
});
/** Resolves once `told` reaches `n`; fails the host after 30 s. */
function toldAtLeast(n, what) {
  return new Promise((resolve, reject) => {
    if (told >= n) return resolve();
    const timer = setTimeout(() => reject(new Error(`no tools/list_changed ${what} within 30 s`)), 30_000);
    const check = () => (told >= n ? (clearTimeout(timer), resolve()) : waiters.push(check));
    waiters.push(check);
  });
}
const echoText = async () =>
  (await client.listTools()).tools.find((t) => t.name === "echo")?.description ?? null;

await client.connect(transport);
const held = { step: "held", before: await echoText() };
await client.callTool({ name: "echo", arguments: { text: "hi" } });
await client.callTool({ name: "list_changed", arguments: {} });
await toldAtLeast(1, "after the change");
held.listed = await echoText();
try {
  await client.callTool({ name: "echo", arguments: { text: "hi" } });
  held.call = "succeeded";
} catch (e) {
  held.call = { code: e.code, message: e.message, data: e.data ?? null };
}
held.told = told;
console.log(JSON.stringify(held));

const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once("line", resolve));
await toldAtLeast(2, "after the approval");
const approved = { step: "approved", listed: await echoText() };
await client.ping();
approved.told = told;
approved.call = (await client.callTool({ name: "echo", arguments: { text: "again" } })).content[0].text;
console.log(JSON.stringify(approved));
lines.close();
await client.close();
