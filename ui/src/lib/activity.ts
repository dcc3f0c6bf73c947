// The activity feed: the latest transitions and failures across every server, one line each,
// like `lifeline watch`. Round trips, tool lists and an attempt's stage-by-stage progress are
// left out so the feed reads as what changed.

import type { Event } from "../host/types";
import { failureLabel } from "./failures";
import { badgeText, formatDelay, type Severity, severity } from "./format";

export interface ActivityItem {
  seq: number;
  at: string;
  server: string;
  generation: number;
  sev: Severity;
  text: string;
  /** The failure's message, or the wait before the next attempt. */
  detail: string | null;
}

export const MAX_ACTIVITY = 200;

/** The feed line for `e`, or null; `prev` is the last event of this server the feed saw. */
export function activityItem(e: Event, prev: Event | undefined): ActivityItem | null {
  const head = { seq: e.seq, at: e.at, server: e.server, generation: e.generation };
  if (e.type === "failure") {
    return { ...head, sev: "critical", text: failureLabel(e.failure), detail: e.failure.message };
  }
  if (e.type !== "state") return null;
  // An attempt's later stages are progress, not news.
  if (
    e.state === "connecting" &&
    prev?.type === "state" &&
    prev.state === "connecting" &&
    prev.generation === e.generation
  ) {
    return null;
  }
  return {
    ...head,
    sev: severity(e.state),
    text: badgeText(e.state === "connecting" ? { ...e, stage: null } : e),
    detail: e.delay_ms !== null ? `next in ${formatDelay(e.delay_ms)}` : null,
  };
}
