// How states, times and counts read on screen. Pure functions of their inputs and `now`
// (milliseconds since the epoch), so they are tested without a clock.

import type { ServerPolicy, StateInfo, StateName, SystemChange } from "../host/types";

type BadgeInput = Pick<
  StateInfo,
  "state" | "stage" | "attempt" | "max_attempts" | "quarantine_level" | "reason"
>;

/**
 * The state in the product's exact vocabulary, with its stage or reason:
 * "connecting — initialize", "retired — auth", "reconnecting — attempt 3/10", "quarantined — level 2",
 * "reconnecting — offline".
 */
export function badgeText(s: BadgeInput): string {
  switch (s.state) {
    case null:
      return "starting";
    case "connecting": {
      const probe = s.reason === "probe";
      if (s.stage) return `connecting — ${s.stage}${probe ? " (probe)" : ""}`;
      return probe ? "connecting — probe" : "connecting";
    }
    case "retrying":
    case "reconnecting":
      // Waiting for the network: nothing is counted, so no attempt to show.
      if (s.reason === "offline") return `${s.state} — offline`;
      return s.attempt !== null && s.max_attempts !== null
        ? `${s.state} — attempt ${s.attempt}/${s.max_attempts}`
        : s.state;
    case "quarantined":
      return `quarantined — level ${s.quarantine_level}`;
    case "retired":
      // `sign_in`: an OAuth server with no usable token (docs/auth.md), said as a person would.
      if (s.reason === "sign_in") return "retired — sign-in needed";
      return s.reason ? `retired — ${s.reason}` : "retired";
    default:
      return s.state;
  }
}

/** Colour families, from calm to loud. */
export type Severity = "off" | "ok" | "busy" | "warn" | "alert" | "critical";

const SEVERITY: Record<StateName, Severity> = {
  disabled: "off",
  ready: "ok",
  connecting: "busy",
  stopping: "busy",
  retrying: "warn",
  reconnecting: "warn",
  quarantined: "alert",
  gave_up: "critical",
  retired: "critical",
};

const RANK: Record<Severity, number> = { off: 0, ok: 1, busy: 2, warn: 3, alert: 4, critical: 5 };

export function severity(state: StateName | null): Severity {
  return state === null ? "busy" : SEVERITY[state];
}

/** Higher is worse: critical (needs a person) > alert > warn > busy > ok > off. */
export function severityRank(state: StateName | null): number {
  return RANK[severity(state)];
}

/** Stopped trying on its own: what "Reconnect all failed" (the core's `reconnect_all_failed`)
 * and the tray's "failed" count act on. */
export function hasStopped(state: StateName | null): boolean {
  return state === "quarantined" || state === "gave_up" || state === "retired";
}

/** Not connected because of failures (recovering on its own, or stopped). */
export function isFailed(state: StateName | null): boolean {
  return (
    state === "retrying" ||
    state === "reconnecting" ||
    state === "quarantined" ||
    state === "gave_up" ||
    state === "retired"
  );
}

/** Terminal until a person acts. */
export function needsPerson(state: StateName | null): boolean {
  return state === "gave_up" || state === "retired";
}

const pad2 = (n: number) => String(n).padStart(2, "0");

/**
 * A live countdown in whole seconds, rounded up so it never shows 0 while still waiting:
 * "27 s", "1 m 05 s", "1 h 02 m"; "now" once due.
 */
export function formatCountdown(ms: number): string {
  if (ms <= 0) return "now";
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${pad2(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${pad2(Math.floor((s % 3600) / 60))} m`;
}

/** Milliseconds until `at`, or null. */
export function remaining(at: string | null, now: number): number | null {
  if (at === null) return null;
  const t = Date.parse(at);
  return Number.isNaN(t) ? null : t - now;
}

/** An age, coarse on purpose: "12 s", "3 m", "5 h", "3 d". */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h`;
  return `${Math.floor(h / 24)} d`;
}

/** "4 s ago", "just now". */
export function ago(at: string, now: number): string {
  const ms = now - Date.parse(at);
  if (Number.isNaN(ms)) return "";
  if (ms < 1000) return "just now";
  return `${formatAge(ms)} ago`;
}

/** Restarts with recency, as kubectl prints them: "5 (3 m ago)"; "0". */
export function restartsText(restarts: number, lastRestartAt: string | null, now: number): string {
  if (restarts === 0 || lastRestartAt === null) return String(restarts);
  return `${restarts} (${ago(lastRestartAt, now)})`;
}

/** The last successful round trip: "2 ms, 4 s ago"; "—" when none yet. */
export function roundTripText(ms: number | null, at: string | null, now: number): string {
  if (ms === null) return "—";
  return at === null ? `${ms} ms` : `${ms} ms, ${ago(at, now)}`;
}

/** A span between two times, for "×14 over 6 min"; whole units, rounded down like ages. */
export function formatSpan(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 90) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h`;
  return `${Math.floor(h / 24)} d`;
}

/** A configured or server-mandated wait: "500 ms", "45 s", "2 min", "1 m 30 s". */
export function formatDelay(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) {
    const s = ms / 1000;
    return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
  }
  const s = Math.round(ms / 1000);
  return s % 60 === 0 ? `${s / 60} min` : `${Math.floor(s / 60)} m ${pad2(s % 60)} s`;
}

/** Local wall-clock time with seconds: "17:05:20". */
export function clockTime(at: string): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return at;
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

/** A server's policy as lines a person reads: the backoff curve, its budget and reset window,
 * the quarantine ladder, the timeouts (ux-anchors: "show the curve, the cap and the reset"). */
export function policyLines(p: ServerPolicy): { label: string; text: string }[] {
  const [q1, q2, q3] = p.quarantine_ms;
  const lines = p.reconnect
    ? [
        {
          label: "Backoff",
          text: `${formatDelay(p.initial_delay_ms)}, doubling to ${formatDelay(p.max_delay_ms)} (±${p.jitter_percent} % jitter; a server's Retry-After is waited exactly)`,
        },
        {
          label: "Budget",
          text: `${p.max_attempts} attempts per outage; a connection up for ${formatDelay(p.max_delay_ms)} starts a fresh budget`,
        },
        {
          label: "Quarantine",
          text: `${formatDelay(q1)} → ${formatDelay(q2)} → ${formatDelay(q3)}, one probe after each; then gave up`,
        },
      ]
    : [{ label: "Reconnect", text: "off: the first failure is final (gave up)" }];
  return [
    ...lines,
    { label: "Connect", text: `one ${formatDelay(p.establish_ms)} deadline over every stage` },
    { label: "Requests", text: `time out after ${formatDelay(p.request_ms)} without progress; ${p.max_concurrent_calls} calls at once` },
    {
      label: "Health",
      text:
        p.ping_interval_ms === null
          ? "no pings"
          : `a ping after ${formatDelay(p.ping_interval_ms)} idle (${formatDelay(p.ping_timeout_ms)} to answer)`,
    },
  ];
}

/** What a negotiated revision means for the connection, after the revision itself. */
export function revisionNote(
  version: string | null | undefined,
  transport: "stdio" | "http" | "sse",
): string {
  // The revision is not the transport. Over HTTP a 2024-11-05 session is the legacy HTTP+SSE
  // transport (configured as `sse`, or found by Lifeline's fallback from Streamable HTTP);
  // over stdio it is only the oldest revision.
  if (version === "2024-11-05") return transport === "stdio" ? " · oldest revision" : " · legacy HTTP+SSE";
  if (version === "2026-07-28") return " · stateless";
  return "";
}

/** What a `system` event says happened to the machine, in a few words. */
export function systemText(change: SystemChange, sleptMs: number | null): string {
  const slept = sleptMs === null ? "" : ` after ${formatDelay(sleptMs)}`;
  return {
    sleeping: "the machine is going to sleep",
    awake: `the machine woke${slept}`,
    offline: "the network is gone",
    online: "the network is back",
  }[change];
}
