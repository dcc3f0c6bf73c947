// Words for the tool pins' review (docs/trust.md): what a server's row and its detail panel
// say about the tools Lifeline holds back from AI clients until someone looks. Pure.

import type { Flag, ServerReview } from "../host/types";

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);

/** The row's badge: "2 tools changed"; empty when nothing is held. */
export function heldText(held: number): string {
  return held > 0 ? `${held} ${plural(held, "tool", "tools")} changed` : "";
}

/** "3 new tools" for tools first seen and not yet looked at; empty for none. */
export function freshText(fresh: number): string {
  return fresh > 0 ? `${fresh} new ${plural(fresh, "tool", "tools")}` : "";
}

/** How many decisions the review waits for: held (not rejected) and first seen. */
export function awaiting(review: ServerReview): number {
  return review.held.filter((h) => !h.rejected).length + review.first_seen.length;
}

const KINDS: Record<Flag["kind"], string> = {
  invisible: "Hidden characters",
  bidi: "Text direction changes",
  tag: "Invisible tag characters",
  confusable: "Look-alike characters",
  instruction: "Instructions to the model",
  long: "Unusually long",
  base64: "Encoded data",
  url: "A link",
  other_tool: "Mentions another server's tool",
};

/** A flag in words: its kind, where, and why. */
export function flagText(flag: Flag): { kind: string; where: string; why: string } {
  return { kind: KINDS[flag.kind] ?? flag.kind, where: `${flag.field} ${flag.start}–${flag.end}`, why: flag.why };
}

/** The panel's heading line: what waits and what it means for the clients. */
export function reviewSummary(review: ServerReview): string {
  const held = review.held.filter((h) => !h.rejected).length;
  const fresh = review.first_seen.length;
  const parts = [heldText(held), freshText(fresh)].filter((p) => p !== "");
  return parts.join(" · ");
}
