// Builders for wire objects and a manual clock, shared by the tests.

import type { MockClock } from "../host/mock";
import { NO_STATE, failureOf, initialView, iso, notSignedIn } from "../host/mock-wire";
import type { AppInfo, AuthChange, AuthStatus, Event, Failure, ServerView, StateInfo } from "../host/types";

export { iso };

export const T0 = Date.parse("2026-11-29T17:00:00.000Z");

/** A stdio server, ready in its first generation with two tools, unless `over` says else. */
export function view(server: string, over: Partial<ServerView> = {}): ServerView {
  return {
    ...initialView(server, "stdio"),
    generation: 1,
    state: "ready",
    tools: ["a", "b"],
    last_round_trip_ms: 2,
    last_round_trip_at: iso(T0),
    protocol_version: "2025-06-18",
    ...over,
  };
}

export function failure(over: Partial<Failure> = {}): Failure {
  const message = "POST /mcp: could not connect to 127.0.0.1:9: connection refused";
  return failureOf("transport", message, 1, { stage: "connect", method: "POST", url_path: "/mcp", ...over });
}

/** A server's OAuth sign-in (no token: the wire has none). */
export function authStatus(over: Partial<AuthStatus> = {}): AuthStatus {
  return { ...notSignedIn(), issuer: "https://auth.example.com", ...over };
}

/** What `app_info` answers: a config file's app with no notices, unless `over` says else. */
export function appInfo(over: Partial<AppInfo> = {}): AppInfo {
  return { version: "0.1.0", mode: "config", config_path: null, log_dir: null, notices: [], ...over };
}

/** What every event starts with. */
function head(seq: number, server: string, generation: number, at: number) {
  return { v: 1, seq, at: iso(at), server, generation };
}

/** An `auth` event: what happened to the server's sign-in. */
export function authEvent(
  seq: number,
  server: string,
  change: AuthChange,
  auth: Partial<AuthStatus> = {},
  f: Partial<Failure> | null = null,
  at = T0 + seq * 1000,
): Event {
  return { ...head(seq, server, 1, at), type: "auth", change, auth: authStatus(auth), failure: f === null ? null : failure(f) };
}

export function stateEvent(
  seq: number,
  server: string,
  generation: number,
  info: Partial<StateInfo>,
  at = T0 + seq * 1000,
): Event {
  return { ...head(seq, server, generation, at), type: "state", ...NO_STATE, state: "ready", ...info };
}

export function failureEvent(seq: number, server: string, f: Partial<Failure>, at = T0 + seq * 1000): Event {
  const fl = failure(f);
  return { ...head(seq, server, fl.generation, at), type: "failure", failure: fl };
}

/** A host's call through the gateway (`host_call`). */
export function hostCallEvent(
  seq: number,
  server: string,
  host: string,
  tool: string,
  outcome: "ok" | "tool_error" | "error" = "ok",
  at = T0 + seq * 1000,
  hostId = 1,
): Event {
  return {
    ...head(seq, server, 1, at),
    type: "host_call",
    host_id: hostId,
    host,
    tool,
    outcome,
    duration_ms: 12,
    error_kind: outcome === "error" ? "not_ready" : null,
  };
}

export function hostAttachedEvent(seq: number, server: string, name: string, at = T0 + seq * 1000): Event {
  const host = { id: 1, name, version: "1.2.0", protocol_version: "2025-06-18", mode: "app" } as const;
  return { ...head(seq, server, 1, at), type: "host_attached", host };
}

/** A clock whose time moves only when told; timers fire in order as it passes them. */
export class ManualClock implements MockClock {
  t: number;
  private timers: { at: number; id: number; fn: () => void }[] = [];
  private nextId = 1;

  constructor(t = T0) {
    this.t = t;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + Math.max(0, ms), id, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== handle);
  }

  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      this.timers.sort((a, b) => a.at - b.at || a.id - b.id);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
  }
}
