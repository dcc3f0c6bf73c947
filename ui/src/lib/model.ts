// One server as the dashboard holds it: the latest view (from a snapshot, then advanced by
// events) and the histories only events can give: the state timeline and the failures.
// Pure data and functions that mutate it in place, so the same code runs on plain objects in
// tests and on Svelte's reactive proxies in the store.

import type { CallEvent, Event, Failure, ServerView, Stage, StateEvent, StateName, SystemChange } from "../host/types";

export interface StateEntry {
  kind: "state";
  seq: number;
  at: string;
  generation: number;
  state: StateName | null;
  stage: Stage | null;
  reason: string | null;
  attempt: number | null;
  max_attempts: number | null;
  quarantine_level: number;
  delay_ms: number | null;
}

/** Events were lost between two seqs; the state was re-read from a snapshot. */
export interface GapEntry {
  kind: "gap";
  at: string;
  after: number;
  before: number;
}

/** The machine slept, woke, or lost or found the network (a `system` event). */
export interface SystemEntry {
  kind: "system";
  seq: number;
  at: string;
  generation: number;
  change: SystemChange;
  slept_ms: number | null;
}

export type TimelineEntry = StateEntry | GapEntry | SystemEntry;

export interface FailureEntry {
  seq: number;
  at: string;
  failure: Failure;
}

export interface ServerModel {
  view: ServerView;
  /** Oldest first, at most MAX_TIMELINE. */
  timeline: TimelineEntry[];
  /** Oldest first, at most MAX_FAILURES. */
  failures: FailureEntry[];
  /** The last tool call through the supervisor (for the call tester, later). */
  lastCall: CallEvent | null;
  /** The seq of the latest host event (attached, detached, a call): the Hosts section
   * re-reads when it moves. */
  hostSeq: number;
}

export const MAX_TIMELINE = 400;
export const MAX_FAILURES = 500;

export function newModel(view: ServerView): ServerModel {
  return { view, timeline: [], failures: [], lastCall: null, hostSeq: 0 };
}

/** A (re-)snapshot replaces the view; the histories are kept. */
export function replaceView(model: ServerModel, view: ServerView): void {
  model.view = view;
}

function push<T>(list: T[], item: T, cap: number): void {
  list.push(item);
  if (list.length > cap) list.splice(0, list.length - cap);
}

/**
 * Advances the model by one event (the store hands them over in `seq` order, once each).
 * Events of an older generation than the view's only add to the histories: a stale
 * generation is inert, and a replayed backlog must not wind the view back.
 */
export function applyEvent(model: ServerModel, e: Event): void {
  const view = model.view;
  const current = e.generation >= view.generation;
  switch (e.type) {
    case "state":
      push(model.timeline, stateEntry(e), MAX_TIMELINE);
      if (!current) return;
      // Every attempt is a new generation: one after the first is a restart.
      if (e.generation > view.generation && view.generation >= 1) {
        view.restarts += e.generation - view.generation;
        view.last_restart_at = e.at;
      }
      view.generation = e.generation;
      view.state = e.state;
      view.stage = e.stage;
      view.attempt = e.attempt;
      view.max_attempts = e.max_attempts;
      view.delay_ms = e.delay_ms;
      view.next_attempt_at = e.next_attempt_at;
      view.quarantine_level = e.quarantine_level;
      view.reason = e.reason;
      view.cause = e.cause;
      return;
    case "failure":
      push(model.failures, { seq: e.seq, at: e.at, failure: e.failure }, MAX_FAILURES);
      return;
    case "tools":
      if (!current) return;
      view.tools = [...e.names];
      view.tools_stale = e.stale;
      view.tools_held = e.held;
      view.tools_new = e.new;
      return;
    case "system":
      push(
        model.timeline,
        { kind: "system", seq: e.seq, at: e.at, generation: e.generation, change: e.change, slept_ms: e.slept_ms },
        MAX_TIMELINE,
      );
      return;
    case "tool_changed":
    case "tool_approved":
    case "tool_rejected":
      // The counts follow in the `tools` event the same judgment sends; the feed shows these.
      return;
    case "round_trip":
      if (!current) return;
      view.last_round_trip_ms = e.round_trip_ms;
      view.last_round_trip_at = e.at;
      return;
    case "call":
      model.lastCall = e;
      return;
    case "host_attached":
    case "host_detached":
    case "host_call":
      model.hostSeq = e.seq;
      return;
    case "auth":
      // A sign-in outlives generations (it is the authorization server's, not the
      // connection's): the newest event says how it stands, whatever its generation.
      view.auth = structuredClone(e.auth);
      return;
  }
}

function stateEntry(e: StateEvent): StateEntry {
  return {
    kind: "state",
    seq: e.seq,
    at: e.at,
    generation: e.generation,
    state: e.state,
    stage: e.stage,
    reason: e.reason,
    attempt: e.attempt,
    max_attempts: e.max_attempts,
    quarantine_level: e.quarantine_level,
    delay_ms: e.delay_ms,
  };
}

/** Records, on every server, that events after `after` and before `before` were lost. */
export function markGap(model: ServerModel, at: string, after: number, before: number): void {
  push(model.timeline, { kind: "gap", at, after, before }, MAX_TIMELINE);
}
