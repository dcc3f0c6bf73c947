// The wire objects with nothing set that the mock host's stand-ins and the tests' builders
// start from: a state, a failure, a sign-in status, a row before its first event; and the ISO
// time every wire `at` is written in. Only shapes and empty values: no story.

import type { AuthStatus, Failure, ServerView, StateInfo, Transport } from "./types";

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A state with nothing set: the base of the mock's state objects. */
export const NO_STATE: StateInfo = {
  state: null,
  stage: null,
  attempt: null,
  max_attempts: null,
  delay_ms: null,
  next_attempt_at: null,
  quarantine_level: 0,
  reason: null,
  cause: null,
  protocol_version: null,
};

/** A failure of the first attempt to connect, with only what every failure has; `extra` adds
 * the stage, the HTTP status, the exit code, … */
export function failureOf(kind: string, message: string, generation: number, extra: Partial<Failure> = {}): Failure {
  return {
    kind,
    phase: "connect",
    stage: null,
    status: null,
    reason: null,
    retry_after_ms: null,
    method: null,
    url_path: null,
    exit_code: null,
    signal: null,
    attempt: 1,
    generation,
    message,
    ...extra,
  };
}

/** No sign-in, and none needed yet. */
export function notSignedIn(): AuthStatus {
  return {
    signed_in: false,
    needs_sign_in: false,
    issuer: null,
    scopes: [],
    expires_at: null,
    signed_in_at: null,
    last_refresh_at: null,
    last_refresh_ok: null,
  };
}

/** A row before its first event: what the shell shows for a supervisor not yet started. */
export function initialView(server: string, transport: Transport): ServerView {
  return {
    server,
    generation: 0,
    ...NO_STATE,
    tools: [],
    tools_stale: false,
    tools_held: 0,
    tools_new: 0,
    last_round_trip_ms: null,
    last_round_trip_at: null,
    auth: null,
    transport,
    restarts: 0,
    last_restart_at: null,
  };
}
