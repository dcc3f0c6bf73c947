// What the mock host answers for the tool pins' review (the shell's `tool_review` and
// `tool_decide`, crates/desktop/src/state/trust.rs): replayed from recorded/trust.json, which
// crates/desktop/src/state/config/trust_recording.rs records from the core's own pins book over
// the story (`make recording`; `make check` fails while it is stale): `filesystem` serves a
// changed `echo` and a new `delete_tree`, `sqlite` was first seen at the load. Nothing here
// diffs, flags or decides: a decision leads to the state the recording says it leads to, or to
// the recorded error, and one the recording does not hold is refused with where to record it.
// The rows follow the review: a held tool leaves the list the dashboard shows, and the counts
// are the review's.

import data from "./recorded/trust.json";
import type { CommandError, ServerReview, ServerView } from "./types";

type Answer = { decided: string[]; to: number } | { error: CommandError };

interface Recorded {
  server: string;
  from: number;
  decision: "approve" | "reject";
  tools: string[] | null;
  answer: Answer;
}

interface Recording {
  /** Reviews; the first of each server's is its review at the load. */
  states: ServerReview[];
  decisions: Recorded[];
}

const REC = data as unknown as Recording;

const same = (a: string[] | null, b: string[] | null) =>
  a === b || (a !== null && b !== null && a.length === b.length && a.every((t, i) => t === b[i]));

function unrecorded(detail: object): CommandError {
  console.error("mock host: no recording of this decision:", JSON.stringify(detail));
  return {
    kind: "review",
    message:
      "The mock host has no recording of this decision. Add it to " +
      "crates/desktop/src/state/config/trust_recording.rs and run `make recording` " +
      "(the request is in the browser console).",
  };
}

export class MockTrust {
  /** Each reviewed server's state now. */
  private readonly now = new Map<string, number>();

  constructor() {
    REC.states.forEach((s, i) => {
      if (!this.now.has(s.server)) this.now.set(s.server, i);
    });
  }

  review(server: string): ServerReview {
    const i = this.now.get(server);
    return i === undefined ? { server, held: [], first_seen: [] } : structuredClone(REC.states[i]!);
  }

  /** The recorded answer to `decision` from the server's state now; moves to its state. */
  decide(server: string, decision: "approve" | "reject", tools: string[] | null): string[] {
    const from = this.now.get(server);
    const found = REC.decisions.find(
      (d) => d.server === server && d.from === from && d.decision === decision && same(d.tools, tools),
    );
    if (!found) throw unrecorded({ server, decision, tools });
    if ("error" in found.answer) throw structuredClone(found.answer.error);
    this.now.set(server, found.answer.to);
    return [...found.answer.decided];
  }

  /** The view as the review has it: held tools out of its list, the review's counts. */
  overlay(view: ServerView): void {
    const review = this.review(view.server);
    const hidden = new Set(review.held.map((h) => h.tool));
    view.tools = view.tools.filter((t) => !hidden.has(t));
    view.tools_held = review.held.filter((h) => !h.rejected).length;
    view.tools_new = review.first_seen.length;
  }
}
