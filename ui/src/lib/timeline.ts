// The state timeline as rows: newest first, and the stage-by-stage progress of one attempt
// folded into one row ("connecting — spawn → initialize"), so a crash loop reads as attempts.

import type { StateName, SystemChange } from "../host/types";
import { badgeText, systemText } from "./format";
import type { TimelineEntry } from "./model";

export type TimelineRow =
  | {
      kind: "state";
      key: string;
      at: string;
      generation: number;
      state: StateName | null;
      text: string;
      /** While connecting: the stages this attempt went through, in order. */
      stages: string[];
      delay_ms: number | null;
    }
  | { kind: "gap"; key: string; at: string; after: number; before: number }
  /** The machine slept, woke, or lost or found the network: a mark between transitions. */
  | { kind: "system"; key: string; at: string; generation: number; change: SystemChange; text: string };

export function timelineRows(entries: readonly TimelineEntry[]): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (const e of entries) {
    if (e.kind === "gap") {
      rows.push({ kind: "gap", key: `gap-${e.after}-${e.before}`, at: e.at, after: e.after, before: e.before });
      continue;
    }
    if (e.kind === "system") {
      const text = systemText(e.change, e.slept_ms);
      rows.push({ kind: "system", key: `m-${e.seq}`, at: e.at, generation: e.generation, change: e.change, text });
      continue;
    }
    const prev = rows[rows.length - 1];
    if (
      e.state === "connecting" &&
      prev?.kind === "state" &&
      prev.state === "connecting" &&
      prev.generation === e.generation
    ) {
      if (e.stage && !prev.stages.includes(e.stage)) prev.stages.push(e.stage);
      continue;
    }
    const text =
      e.state === "connecting"
        ? badgeText({ ...e, stage: null }) // the stages are listed beside it
        : badgeText(e);
    rows.push({
      kind: "state",
      key: `s-${e.seq}`,
      at: e.at,
      generation: e.generation,
      state: e.state,
      text,
      stages: e.stage ? [e.stage] : [],
      delay_ms: e.delay_ms,
    });
  }
  return rows.reverse();
}
