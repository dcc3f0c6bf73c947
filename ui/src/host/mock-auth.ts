// The mock's OAuth sign-in (docs/auth.md), a thin stand-in: the recording holds each
// server's sign-in status at the page load (snapshots) but no sign-in ever happened in it, so
// what a sign-in and a sign-out do is written here. A sign-in "waits for the browser" for
// BROWSER_MS on the mock's clock, then the server is signed in (an `auth` event) and replays
// what a reset did to a healthy server; a sign-out is an `auth` event, then the attempt the
// core would make: it fails with `sign_in` and retires the server with reason `sign_in`.
// `?mock&signin=linear` starts a server in that state. No token exists anywhere here.

import { type RecordedEvent, type Row, snapshotOf } from "./mock-replay";
import { NO_STATE, failureOf, iso, notSignedIn } from "./mock-wire";
import type { AuthStatus, CommandError, Failure, ServerView } from "./types";

/** How long the mock's person takes in the browser. */
export const BROWSER_MS = 2000;

/** How long the mock's access tokens last. */
const TOKEN_MS = 60 * 60_000;

/** The message the core gives a server that needs a person to sign in (auth/flow.rs). */
export const SIGN_IN_NEEDED = "sign-in needed: the server uses OAuth and Lifeline holds no valid token for it (docs/auth.md)";

/** What the core answers for a server that has no OAuth sign-in (supervisor/actor/handle.rs). */
export const NO_SIGN_IN: CommandError = {
  kind: "config",
  message: "this server does not sign in with OAuth: only an HTTP server without a static Authorization header does",
};

/** A server removed or replaced in the editor while its sign-in waited. */
export function replaced(server: string): CommandError {
  return { kind: "unknown_server", message: `\`${server}\` was removed or replaced during the sign-in` };
}

/** The row's sign-in at the page load: the recorded one; none for stdio. */
export function authOf(row: Row): AuthStatus | null {
  if (row.transport === "stdio") return null;
  return snapshotOf(row.source)?.auth ?? notSignedIn();
}

/** Signed in `now` (ms since the epoch) with the server's authorization server. */
export function signedIn(server: string, prev: AuthStatus, now: number): AuthStatus {
  return {
    signed_in: true,
    needs_sign_in: false,
    issuer: prev.issuer ?? `https://auth.${server}.example.com`,
    scopes: ["read", "write", "offline_access"],
    expires_at: iso(now + TOKEN_MS),
    signed_in_at: iso(now),
    last_refresh_at: null,
    last_refresh_ok: null,
  };
}

/** No usable token: a person must sign in. The issuer is known: the core found it by the
 * discovery that ended in "sign-in needed". */
export function needingSignIn(server: string, prev: AuthStatus | null): AuthStatus {
  return { ...notSignedIn(), needs_sign_in: true, issuer: prev?.issuer ?? `https://auth.${server}.example.com` };
}

function signInFailure(generation: number): Failure {
  return failureOf("sign_in", SIGN_IN_NEEDED, generation, {
    stage: "initialize",
    status: 401,
    reason: "Unauthorized",
    method: "POST",
    url_path: "/mcp",
  });
}

const STATE = { type: "state", v: 1, ...NO_STATE } as const;

/** An attempt of `view`'s next generation, `at` ms after the page load, that finds no token:
 * what the core does for a server that needs sign-in (retired, reason `sign_in`). */
export function signInNeededStory(view: Pick<ServerView, "server" | "generation" | "auth">, at: number): RecordedEvent[] {
  const server = view.server;
  const generation = view.generation + 1;
  const failure = signInFailure(generation);
  const head = { at, server, generation };
  return [
    { ...STATE, ...head, state: "connecting", stage: "connect", attempt: 1, max_attempts: 10 },
    { ...STATE, ...head, state: "connecting", stage: "initialize", attempt: 1, max_attempts: 10 },
    { ...head, v: 1, type: "failure", failure },
    { ...STATE, ...head, state: "retired", stage: null, reason: "sign_in", cause: failure },
    { ...head, v: 1, type: "auth", change: "sign_in_needed", auth: needingSignIn(server, view.auth), failure },
  ];
}

/** The recorded server whose reset a signed-in server replays: the HTTP one that connects. */
export const SIGNED_IN_SOURCE = "github";

/** `events` as the attempts after `view`'s generation: the first of them is the next one. */
export function renumbered(events: RecordedEvent[], view: Pick<ServerView, "generation">): RecordedEvent[] {
  const first = Math.min(...events.map((e) => e.generation));
  const shift = view.generation + 1 - first;
  return events.map((e) => ({ ...e, generation: e.generation + shift }));
}
