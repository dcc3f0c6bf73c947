import { describe, expect, test } from "vitest";
import type { ServerReview } from "../host/types";
import { awaiting, flagText, freshText, heldText, reviewSummary } from "./trust";

const review = (held: boolean[], fresh: number): ServerReview => ({
  server: "fs",
  held: held.map((rejected, i) => ({
    tool: `t${i}`,
    kind: "changed",
    rejected,
    since: "2026-12-07T21:00:00.000Z",
    description: [],
    fields: [],
    more_fields: false,
    definition: {},
    flags: [],
  })),
  first_seen: Array.from({ length: fresh }, (_, i) => ({ tool: `n${i}`, at: "x", definition: {}, flags: [] })),
});

describe("trust words", () => {
  test("the row says how many tools changed, and nothing when none did", () => {
    expect(heldText(0)).toBe("");
    expect(heldText(1)).toBe("1 tool changed");
    expect(heldText(2)).toBe("2 tools changed");
    expect(freshText(1)).toBe("1 new tool");
  });

  test("rejected changes wait for nothing", () => {
    const r = review([false, true], 3);
    expect(awaiting(r)).toBe(4);
    expect(reviewSummary(r)).toBe("1 tool changed · 3 new tools");
    expect(reviewSummary(review([], 0))).toBe("");
  });

  test("a flag says its kind, where and why", () => {
    const f = flagText({ kind: "instruction", field: "description", start: 3, end: 9, why: "aimed at the model" });
    expect(f).toEqual({ kind: "Instructions to the model", where: "description 3–9", why: "aimed at the model" });
  });
});

describe("the feed's lines for the review", () => {
  const event = (type: "tool_changed" | "tool_approved" | "tool_rejected", tools: string[], count: number) =>
    ({ v: 1, seq: 4, at: "2026-12-07T21:00:00.000Z", server: "fs", generation: 2, type, tools, count }) as const;

  test("held, approved and rejected tools each read as what happened", async () => {
    const { activityItem } = await import("./activity");
    const held = activityItem(event("tool_changed", ["a", "b", "c", "d"], 5), undefined)!;
    expect(held).toMatchObject({ sev: "warn", text: "5 tools changed: held for review" });
    expect(held.detail).toBe("a, b, c and 2 more · open the server to review");
    expect(activityItem(event("tool_approved", ["a"], 1), undefined)).toMatchObject({ sev: "ok", text: "1 tool approved", detail: "a" });
    expect(activityItem(event("tool_rejected", ["a"], 1), undefined)).toMatchObject({ text: "1 tool rejected" });
  });
});

describe("the feed's line for the machine", () => {
  test("one line for every server's report of one wake", async () => {
    const { activityItem, pushActivity } = await import("./activity");
    const woke = (seq: number, server: string, at: string) =>
      activityItem(
        { v: 1, seq, at, server, generation: 1, type: "system", change: "awake", slept_ms: 600_000 },
        undefined,
      )!;
    let items = pushActivity([], woke(1, "a", "2026-12-07T21:00:00.000Z"), 10);
    items = pushActivity(items, woke(2, "b", "2026-12-07T21:00:00.500Z"), 10);
    items = pushActivity(items, woke(3, "c", "2026-12-07T21:00:01.000Z"), 10);
    expect(items).toHaveLength(1);
    expect(items[0]!.text).toMatch(/^the machine woke after /);
    expect(items[0]!.detail).toBe("3 servers checked");
    items = pushActivity(items, woke(4, "a", "2026-12-07T22:00:00.000Z"), 10);
    expect(items).toHaveLength(2);
  });
});
