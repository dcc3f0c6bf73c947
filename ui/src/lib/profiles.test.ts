// The Profiles view's words over the shell's recorded views (recorded/profiles.json).

import { expect, test } from "vitest";
import { MockProfiles } from "../host/mock-profiles";
import { groups, summary, tokensText, toolsText, users } from "./profiles";

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
    "1 host attached through the app now",
    "HTTP token bound to it: cursor",
    "HTTP token that opens any profile: claude-code",
  ]);
  expect(users(of("default"), [])).toEqual([]);
});
