import { describe, expect, test } from "vitest";
import { MockTrust } from "./mock-trust";
import { initialView } from "./mock-wire";

describe("the mock's tool review replays the shell's", () => {
  test("a decision moves to its recorded state; an unrecorded one says where to record it", () => {
    const t = new MockTrust();
    expect(t.review("filesystem").held.map((h) => h.tool)).toEqual(["delete_tree", "log"]);
    expect(t.decide("filesystem", "approve", ["log"])).toEqual(["log"]);
    expect(t.review("filesystem").held.map((h) => h.tool)).toEqual(["delete_tree"]);
    expect(() => t.decide("filesystem", "approve", ["nope"])).toThrow();
    try {
      t.decide("sqlite", "reject", ["log"]);
    } catch (e) {
      expect((e as { message: string }).message).toContain("trust_recording.rs");
    }
    expect(t.review("github")).toEqual({ server: "github", held: [], first_seen: [] });
  });

  test("a row shows what the review shows: held tools out of its list, the counts", () => {
    const t = new MockTrust();
    const v = initialView("filesystem", "stdio");
    v.tools = ["log", "add"];
    t.overlay(v);
    expect(v.tools).toEqual(["add"]);
    expect([v.tools_held, v.tools_new]).toEqual([2, 0]);
    const s = initialView("sqlite", "stdio");
    t.overlay(s);
    expect(s.tools_new).toBe(10);
  });
});
