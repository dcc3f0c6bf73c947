// The activity feed: the latest transitions and failures across every server, one line each,
// like `lifeline watch`, and the hosts (AI clients) attached through `lifeline connect` with
// their calls. Round trips, tool lists and an attempt's stage-by-stage progress are left out
// so the feed reads as what changed. OAuth sign-ins (`auth` events) are lines too: signed in,
// token refreshed, refresh failed, sign-in needed, signed out; a host's calls in a row are one line (`pushActivity`),
// so a busy host does not flood it. Tools held for review, approved or rejected are lines too.

import type { AuthEvent, Event } from "../host/types";
import { failureLabel } from "./failures";
import { badgeText, formatDelay, type Severity, severity, systemText } from "./format";

export interface ActivityItem {
  seq: number;
  at: string;
  server: string;
  generation: number;
  sev: Severity;
  text: string;
  /** The failure's message, or the wait before the next attempt. */
  detail: string | null;
  /** A host's line: the host it is about (a call's host). */
  host?: string;
  /** A line of a host's calls: how many it stands for, and how many of them failed. */
  calls?: { n: number; errors: number; hostId: number };
  /** A line about the machine (a wake, the network): how many servers told it. */
  machine?: { n: number };
}

/** The servers' lines about one change of the machine arrive together: one line for all. */
export const MACHINE_COALESCE_MS = 10_000;

/** A host's calls closer together than this share one line. */
export const COALESCE_MS = 60_000;

function callWord(outcome: string, kind: string | null): string {
  if (outcome === "ok") return "ok";
  if (outcome === "tool_error") return "tool error";
  return kind ? kind.replace(/_/g, " ") : "error";
}

/**
 * Puts `item` on top of `items` (newest first, at most `max`): a host's call right after
 * another call of the same host on the same server, within `COALESCE_MS`, joins that line
 * ("cursor: 12 calls, 1 failed") instead of adding one.
 */
export function pushActivity<T extends ActivityItem>(items: T[], item: T, max: number): T[] {
  const top = items[0];
  if (
    item.machine &&
    top?.machine &&
    top.text === item.text &&
    Math.abs(Date.parse(item.at) - Date.parse(top.at)) <= MACHINE_COALESCE_MS
  ) {
    const n = top.machine.n + 1;
    return [{ ...top, machine: { n }, detail: `${n} servers checked` }, ...items.slice(1)];
  }
  if (
    item.calls &&
    top?.calls &&
    top.server === item.server &&
    top.calls.hostId === item.calls.hostId &&
    Date.parse(item.at) - Date.parse(top.at) <= COALESCE_MS
  ) {
    const n = top.calls.n + 1;
    const errors = top.calls.errors + item.calls.errors;
    const merged: T = {
      ...item,
      sev: errors > 0 ? "warn" : "ok",
      text: `${item.host}: ${n} calls${errors > 0 ? `, ${errors} failed` : ""}`,
      detail: `last: ${item.text.slice(item.host!.length + 2)}${item.detail ? ` · ${item.detail}` : ""}`,
      calls: { n, errors, hostId: item.calls.hostId },
    };
    return [merged, ...items.slice(1)];
  }
  return [item, ...items.slice(0, max - 1)];
}

export const MAX_ACTIVITY = 200;

/** The feed line for `e`, or null; `prev` is the last event of this server the feed saw. */
export function activityItem(e: Event, prev: Event | undefined): ActivityItem | null {
  const head = { seq: e.seq, at: e.at, server: e.server, generation: e.generation };
  if (e.type === "failure") {
    return { ...head, sev: "critical", text: failureLabel(e.failure), detail: e.failure.message };
  }
  if (e.type === "host_attached") {
    const h = e.host;
    const via = h.mode === "app" ? "through the app" : "in its own process";
    return { ...head, sev: "ok", host: h.name, text: `${h.name} ${h.version} attached`, detail: `${via} · MCP ${h.protocol_version}` };
  }
  if (e.type === "host_detached") {
    return { ...head, sev: "off", host: e.host.name, text: `${e.host.name} detached`, detail: null };
  }
  if (e.type === "host_call") {
    const failed = e.outcome !== "ok";
    return {
      ...head,
      sev: failed ? "warn" : "ok",
      host: e.host,
      text: `${e.host}: ${e.tool} ${callWord(e.outcome, e.error_kind)}`,
      detail: `${e.duration_ms} ms`,
      calls: { n: 1, errors: failed ? 1 : 0, hostId: e.host_id },
    };
  }
  if (e.type === "auth") return authItem(e, head);
  if (e.type === "system") {
    return { ...head, sev: "off", text: systemText(e.change, e.slept_ms), detail: null, machine: { n: 1 } };
  }
  if (e.type === "tool_changed" || e.type === "tool_approved" || e.type === "tool_rejected") {
    return trustItem(e, head);
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

/** Tools held for review, approved or rejected (docs/trust.md): which, and what it means. */
function trustItem(
  e: Extract<Event, { type: "tool_changed" | "tool_approved" | "tool_rejected" }>,
  head: Pick<ActivityItem, "seq" | "at" | "server" | "generation">,
): ActivityItem {
  const shown = e.tools.slice(0, 3).join(", ") + (e.count > 3 ? ` and ${e.count - 3} more` : "");
  const n = `${e.count} ${e.count === 1 ? "tool" : "tools"}`;
  if (e.type === "tool_changed") {
    return { ...head, sev: "warn", text: `${n} changed: held for review`, detail: `${shown} · open the server to review` };
  }
  if (e.type === "tool_approved") return { ...head, sev: "ok", text: `${n} approved`, detail: shown };
  return { ...head, sev: "off", text: `${n} rejected`, detail: shown };
}

/** An `auth` event's line: what happened to the sign-in, and with whom or why. Never a token:
 * the event holds none, and only the issuer, the scopes and a failure's message are shown. */
function authItem(e: AuthEvent, head: Pick<ActivityItem, "seq" | "at" | "server" | "generation">): ActivityItem {
  const issuer = e.auth.issuer;
  switch (e.change) {
    case "signed_in":
      return { ...head, sev: "ok", text: "signed in", detail: issuer ? `with ${issuer}` : null };
    case "refreshed":
      return { ...head, sev: "ok", text: "token refreshed", detail: null };
    case "refresh_failed":
      return { ...head, sev: "warn", text: "token refresh failed", detail: e.failure?.message ?? null };
    case "sign_in_needed":
      return { ...head, sev: "critical", text: "sign-in needed", detail: e.failure?.message ?? "use Sign in to sign in again" };
    case "signed_out":
      return { ...head, sev: "off", text: "signed out", detail: null };
  }
}
