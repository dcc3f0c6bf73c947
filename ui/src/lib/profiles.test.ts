// The Profiles view's words over the shell's recorded views (recorded/profiles.json).

import { expect, test } from "vitest";
import { MockProfiles } from "../host/mock-profiles";
import { ANY_HOST, atHost, groups, hostChoices, limits, summary, tokensText, toolsText, users } from "./profiles";

const view = new MockProfiles().view();
const of = (name: string) => view.profiles.find((p) => p.preview.profile === name)!;

test("tools are grouped by server in the view's order, with what each switch cannot do", () => {
  const coding = groups(of("coding"));
  expect(coding.map((g) => [g.server, g.shown, g.tools.length])).toEqual([["filesystem", 8, 10]]);
  const fixed = coding[0]!.tools.filter((r) => r.fixed !== null).map((r) => r.tool.tool);
  expect(fixed).toEqual(["list_changed"]);
  expect(groups(of("default")).map((g) => g.server)).toEqual(["filesystem", "sqlite"]);
  // In search mode no switch works, each saying why.
  expect(groups(of("everything")).every((g) => g.tools.every((r) => r.fixed?.includes("search mode")))).toBe(true);
});

test("counts and tokens in words", () => {
  expect([toolsText(1), toolsText(12)]).toEqual(["1 tool", "12 tools"]);
  expect([tokensText(840), tokensText(12_345), tokensText(250_000)]).toEqual([
    "≈ 840 tokens",
    "≈ 12.3k tokens",
    "≈ 250k tokens",
  ]);
  const d = of("default").preview;
  expect(summary(of("default"))).toBe(`20 tools, ${tokensText(d.tokens)}`);
  const e = of("everything").preview;
  expect(summary(of("everything"))).toBe(
    `search mode: 3 tools to find and call 20 tools, ${tokensText(e.tokens)} instead of ${tokensText(e.full_tokens)}`,
  );
});

test("who uses a profile", () => {
  expect(users(of("coding"), view.unbound)).toEqual([
    "Cursor: mcpServers.lifeline in /home/ada/.cursor/mcp.json",
    "Attached through the app now: cursor-vscode 1.7.2",
    "HTTP token bound to it: cursor",
    "HTTP token that opens any profile: claude-code",
  ]);
  expect(users(of("default"), [])).toEqual([]);
  const unnamed = { ...of("everything"), attached: [null, "claude-code 2.1.0"] };
  expect(users(unnamed, [])).toEqual([
    "Attached through the app now: a host that has not said its name yet, claude-code 2.1.0",
  ]);
});

test("a host's names, counts and limits over the shell's view; any host is the view itself", () => {
  const coding = of("coding");
  expect(atHost(coding, ANY_HOST)).toBe(coding);
  expect(atHost(coding, "no-such-host")).toBe(coding);
  const vscode = atHost(coding, "vscode");
  expect(vscode.preview).toMatchObject({ client: "vscode", limit: 128, budget: 46 });
  expect(vscode.preview.tools).toEqual(coding.preview.tools);
  expect(hostChoices(coding).map((c) => c.label)).toEqual([
    "Any host (the shortest names)",
    "Claude Code",
    "Claude Desktop",
    "Cursor (uses it)",
    "VS Code",
    "Codex",
    "Gemini CLI",
    "Windsurf",
  ]);
  expect(limits(vscode)).toBe("Names of at most 46 characters; at most 128 tools");
});
