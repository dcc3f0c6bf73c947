// The mock host's Profiles view: the shell's recorded views, a switch leading where the shell's
// recording says, and a switch the recording does not hold refused with how to record it.

import { describe, expect, test } from "vitest";
import { ManualClock, T0 } from "../test/fixtures";
import { MockHost } from "./mock";
import type { ProfilesView } from "./types";

const of = (v: ProfilesView, name: string) => v.profiles.find((p) => p.preview.profile === name)!;

describe("the mock host's Profiles view", () => {
  test("is the story's servers as the shell saw them at the load", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const view = await m.profilesGet();
    expect(view.profiles.map((p) => [p.preview.profile, p.preview.listed, p.defined])).toEqual([
      ["default", 20, false],
      ["coding", 8, true],
      ["everything", 3, true],
    ]);
    expect(of(view, "default").no_tools).toEqual(["github", "linear"]);
    expect(of(view, "coding")).toMatchObject({ tokens: ["cursor"], attached: ["cursor-vscode 1.7.2"] });
    expect(of(view, "coding").clients).toEqual([
      { client: "cursor", label: "Cursor", field: "mcpServers.lifeline", path: "/home/ada/.cursor/mcp.json" },
    ]);
    expect(of(view, "coding").hosts.map((h) => h.client)).toEqual([
      "claude-code",
      "claude-desktop",
      "cursor",
      "vscode",
      "codex",
      "gemini",
      "windsurf",
    ]);
    expect(of(view, "everything").preview.search).toBe(true);
    expect(view.unbound).toEqual(["claude-code"]);
    expect(m.calls).toEqual([{ command: "profiles_get" }]);
  });

  test("a switch and its way back replay the shell's answers", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const off = await m.profileToolSet("default", "filesystem", "echo", false);
    expect(of(off, "default").preview.listed).toBe(19);
    expect(of(off, "default").defined).toBe(true);
    expect(of(off, "coding").preview.listed).toBe(8);
    // Already off: nothing to write, the same view.
    expect(await m.profileToolSet("default", "filesystem", "echo", false)).toEqual(off);
    const on = await m.profileToolSet("default", "filesystem", "echo", true);
    expect(of(on, "default").preview.listed).toBe(20);
    const crash = await m.profileToolSet("coding", "filesystem", "crash", true);
    expect(of(crash, "coding").preview.tools.find((t) => t.tool === "crash")?.shown).toBe(true);
  });

  test("the shell's refusal is replayed; an unrecorded switch says how to record it", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    await expect(m.profileToolSet("coding", "filesystem", "list_changed", true)).rejects.toMatchObject({
      kind: "config",
      message: expect.stringContaining("`list_*`"),
    });
    await m.profileToolSet("default", "filesystem", "echo", false);
    const errors: unknown[] = [];
    const was = console.error;
    console.error = (...args: unknown[]) => errors.push(args);
    try {
      await expect(m.profileToolSet("default", "filesystem", "add", false)).rejects.toMatchObject({
        message: expect.stringMatching(/no recording of this switch.*make recording/),
      });
    } finally {
      console.error = was;
    }
    expect(errors).toHaveLength(1);
  });
});
