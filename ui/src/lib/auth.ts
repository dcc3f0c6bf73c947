// A server's OAuth sign-in as people read it (docs/auth.md): whether it needs one, and the
// facts the detail panel lists. Pure functions of the `AuthStatus` and `now`; the status
// holds no token, and nothing here would show one.

import type { AuthStatus, ServerView } from "../host/types";
import { ago, clockTime, formatAge } from "./format";

/** A person must sign in: the sign-in says so, or the server retired for it (unless a sign-in
 * has just succeeded and the reconnect it starts has not been heard of yet). */
export function needsSignIn(v: Pick<ServerView, "auth" | "state" | "reason">): boolean {
  if (v.auth?.needs_sign_in) return true;
  if (v.auth?.signed_in) return false;
  return v.state === "retired" && v.reason === "sign_in";
}

/** Whether the server can sign in at all (it has an OAuth sign-in: HTTP without a static header). */
export function canSignIn(v: Pick<ServerView, "auth" | "state" | "reason">): boolean {
  return v.auth !== null || needsSignIn(v);
}

/** "Signed in", "Sign-in needed", "Not signed in". */
export function authSummary(a: AuthStatus): string {
  if (a.needs_sign_in) return "Sign-in needed";
  return a.signed_in ? "Signed in" : "Not signed in";
}

/** A day and a wall-clock time in the local zone: "2026-11-29 17:05:20". */
function absolute(at: string): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return at;
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${clockTime(at)}`;
}

/** When the access token expires: "in 42 m (2026-11-29 17:47:00)", "expired 3 m ago (…)". */
export function expiryText(at: string | null, now: number): string {
  if (at === null) return "not said by the authorization server";
  const ms = Date.parse(at) - now;
  if (Number.isNaN(ms)) return at;
  const rel = ms > 0 ? `in ${formatAge(ms)}` : `expired ${ago(at, now)}`;
  return `${rel} (${absolute(at)})`;
}

/** A past moment: "5 m ago (2026-11-29 16:55:00)"; "—" when none. */
export function whenText(at: string | null, now: number): string {
  return at === null ? "—" : `${ago(at, now)} (${absolute(at)})`;
}

/** The last refresh and how it went: "ok, 5 m ago (…)", "failed, 1 m ago (…)", "none yet". */
export function refreshText(a: AuthStatus, now: number): string {
  if (a.last_refresh_at === null) return "none yet";
  const outcome = a.last_refresh_ok === false ? "failed" : "ok";
  return `${outcome}, ${whenText(a.last_refresh_at, now)}`;
}

/** The rows of the detail panel's Sign-in section. */
export function authLines(a: AuthStatus, now: number): { label: string; text: string; key: string }[] {
  return [
    { key: "issuer", label: "Authorization server", text: a.issuer ?? "not known yet (found at the first sign-in)" },
    { key: "scopes", label: "Scopes", text: a.scopes.length > 0 ? a.scopes.join(" ") : "—" },
    { key: "expires", label: "Token expires", text: a.signed_in ? expiryText(a.expires_at, now) : "—" },
    { key: "signed-in", label: "Signed in", text: whenText(a.signed_in_at, now) },
    { key: "refresh", label: "Last refresh", text: refreshText(a, now) },
  ];
}
