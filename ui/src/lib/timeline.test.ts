import { expect, test } from "vitest";
import type { Event } from "../host/types";
import { stateEvent, view } from "../test/fixtures";
import { applyEvent, markGap, newModel } from "./model";
import { timelineRows } from "./timeline";

test("an attempt's stages fold into one row; newest first; gaps shown", () => {
  const m = newModel(view("a", { generation: 0, state: null }));
  const events: Event[] = [
    stateEvent(1, "a", 1, { state: "connecting", stage: "spawn", attempt: 1, max_attempts: 10 }),
    stateEvent(2, "a", 1, { state: "connecting", stage: "initialize", attempt: 1, max_attempts: 10 }),
    stateEvent(3, "a", 1, { state: "retrying", attempt: 1, max_attempts: 10, delay_ms: 512 }),
    stateEvent(4, "a", 2, { state: "connecting", stage: "spawn", attempt: 2, max_attempts: 10 }),
  ];
  for (const e of events) applyEvent(m, e);
  markGap(m, "2026-11-29T17:00:09.000Z", 4, 9);
  const rows = timelineRows(m.timeline);
  expect(rows.map((r) => (r.kind === "state" ? `${r.text} [${r.stages.join(",")}] #${r.generation}` : r.kind))).toEqual([
    "gap",
    "connecting [spawn] #2",
    "retrying — attempt 1/10 [] #1",
    "connecting [spawn,initialize] #1",
  ]);
});

test("the machine's sleep, wake and network are marked between transitions", () => {
  const m = newModel(view("a", { generation: 1, state: "ready" }));
  const at = "2026-12-08T01:00:00.000Z";
  const system = (seq: number, change: "sleeping" | "awake" | "offline" | "online", slept_ms: number | null = null): Event => ({
    v: 1, seq, at, server: "a", generation: 1, type: "system", change, slept_ms,
  });
  applyEvent(m, system(1, "sleeping"));
  applyEvent(m, system(2, "awake", 600_000));
  applyEvent(m, system(3, "offline"));
  applyEvent(m, stateEvent(4, "a", 2, { state: "reconnecting", reason: "offline", delay_ms: 30_000 }));
  applyEvent(m, system(5, "online"));
  const rows = timelineRows(m.timeline);
  expect(rows.map((r) => (r.kind === "gap" ? "gap" : r.text))).toEqual([
    "the network is back",
    "reconnecting — offline",
    "the network is gone",
    "the machine woke after 10 min",
    "the machine is going to sleep",
  ]);
  expect(m.view.state).toBe("reconnecting");
});

test("the view follows the newest generation only; tools and round trips too", () => {
  const m = newModel(view("a", { generation: 5, state: "ready", tools: ["x"] }));
  applyEvent(m, { v: 1, seq: 1, at: "t", server: "a", generation: 4, type: "tools", count: 0, stale: false, names: [], held: 0, new: 0 });
  applyEvent(m, { v: 1, seq: 2, at: "t", server: "a", generation: 4, type: "round_trip", round_trip_ms: 999 });
  expect(m.view.tools).toEqual(["x"]);
  expect(m.view.last_round_trip_ms).toBe(2);
  applyEvent(m, { v: 1, seq: 3, at: "t2", server: "a", generation: 5, type: "tools", count: 1, stale: true, names: ["x"], held: 2, new: 0 });
  applyEvent(m, { v: 1, seq: 4, at: "t3", server: "a", generation: 5, type: "round_trip", round_trip_ms: 7 });
  expect(m.view).toMatchObject({ tools: ["x"], tools_stale: true, tools_held: 2, last_round_trip_ms: 7, last_round_trip_at: "t3" });
});
