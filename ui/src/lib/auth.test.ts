// A server's OAuth sign-in as the dashboard reads it: when Sign in leads, how the facts read,
// the feed's lines for auth events, the advice of a sign_in cause, and the model and store
// taking auth events into the view.

import { describe, expect, test } from "vitest";
import { FakeHost } from "../test/fake-host";
import { authEvent, authStatus, iso, stateEvent, T0, view } from "../test/fixtures";
import { activityItem } from "./activity";
import { authLines, expiryText, needsSignIn, refreshText } from "./auth";
import { failureAdvice } from "./failures";
import { applyEvent, newModel } from "./model";
import { DashboardStore } from "./store.svelte";

describe("needsSignIn", () => {
  test.each([
    [{ auth: authStatus({ needs_sign_in: true }), state: "retired", reason: "sign_in" }, true],
    [{ auth: authStatus({ needs_sign_in: true }), state: "connecting", reason: null }, true],
    [{ auth: null, state: "retired", reason: "sign_in" }, true],
    [{ auth: authStatus(), state: "retired", reason: "sign_in" }, true],
    // Signed in just now: the reconnect it starts has not been heard of yet.
    [{ auth: authStatus({ signed_in: true }), state: "retired", reason: "sign_in" }, false],
    [{ auth: authStatus(), state: "retired", reason: "auth" }, false],
    [{ auth: authStatus({ signed_in: true }), state: "ready", reason: null }, false],
    [{ auth: null, state: "ready", reason: null }, false],
  ] as const)("%o → %s", (v, expected) => {
    expect(needsSignIn(v)).toBe(expected);
  });
});

describe("the Sign-in facts", () => {
  const NOW = T0;

  test("expiry is relative and absolute; an expired token says so", () => {
    expect(expiryText(iso(NOW + 42 * 60_000), NOW)).toMatch(/^in 42 m \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)$/);
    expect(expiryText(iso(NOW - 3 * 60_000), NOW)).toMatch(/^expired 3 m ago \(/);
    expect(expiryText(null, NOW)).toBe("not said by the authorization server");
  });

  test("the last refresh says how it went", () => {
    expect(refreshText(authStatus(), NOW)).toBe("none yet");
    expect(refreshText(authStatus({ last_refresh_at: iso(NOW - 5 * 60_000), last_refresh_ok: true }), NOW)).toMatch(/^ok, 5 m ago \(/);
    expect(refreshText(authStatus({ last_refresh_at: iso(NOW - 60_000), last_refresh_ok: false }), NOW)).toMatch(/^failed, 1 m ago \(/);
  });

  test("the lines: issuer, scopes, expiry (only when signed in), signed in, last refresh", () => {
    const a = authStatus({
      signed_in: true,
      scopes: ["repo", "read:org"],
      expires_at: iso(NOW + 3_600_000),
      signed_in_at: iso(NOW - 7_200_000),
    });
    const lines = Object.fromEntries(authLines(a, NOW).map((l) => [l.label, l.text]));
    expect(lines["Authorization server"]).toBe("https://auth.example.com");
    expect(lines["Scopes"]).toBe("repo read:org");
    expect(lines["Token expires"]).toMatch(/^in 1 h \(/);
    expect(lines["Signed in"]).toMatch(/^2 h ago \(/);
    expect(lines["Last refresh"]).toBe("none yet");
    const out = Object.fromEntries(authLines(authStatus({ issuer: null }), NOW).map((l) => [l.label, l.text]));
    expect(out["Authorization server"]).toMatch(/not known yet/);
    expect(out["Token expires"]).toBe("—");
    expect(out["Scopes"]).toBe("—");
  });
});

describe("auth events in the activity feed", () => {
  test.each([
    ["signed_in", "signed in", "with https://auth.example.com", "ok"],
    ["refreshed", "token refreshed", null, "ok"],
    ["refresh_failed", "token refresh failed", "POST /token: the authorization server answered 503", "warn"],
    ["sign_in_needed", "sign-in needed", "POST /token: the authorization server answered 503", "critical"],
    ["signed_out", "signed out", null, "off"],
  ] as const)("%s reads “%s”", (change, text, detail, sev) => {
    const f = change === "refresh_failed" || change === "sign_in_needed" ? { kind: "server", message: "POST /token: the authorization server answered 503" } : null;
    const item = activityItem(authEvent(3, "gh", change, {}, f), undefined)!;
    expect(item).toMatchObject({ server: "gh", text, detail, sev });
  });

  test("sign-in needed without a failure still says what to do", () => {
    expect(activityItem(authEvent(3, "gh", "sign_in_needed"), undefined)!.detail).toMatch(/Sign in/);
  });
});

describe("a sign_in cause is signed in, an auth cause is fixed in the config", () => {
  test("advice", () => {
    expect(failureAdvice({ kind: "sign_in" })).toMatch(/^Sign in/);
    expect(failureAdvice({ kind: "sign_in" })).not.toMatch(/Authorization header|token\) in/);
    expect(failureAdvice({ kind: "auth" })).toMatch(/Authorization header/);
    expect(failureAdvice({ kind: "transport" })).toBeNull();
  });
});

describe("auth events update the view", () => {
  test("the model takes the event's status, whatever the generation", () => {
    const m = newModel(view("gh", { generation: 4, transport: "http", auth: authStatus({ needs_sign_in: true }) }));
    applyEvent(m, authEvent(9, "gh", "signed_in", { signed_in: true, scopes: ["repo"] }));
    expect(m.view.auth).toMatchObject({ signed_in: true, needs_sign_in: false, scopes: ["repo"] });
    expect(m.view.state).toBe("ready");
  });

  test("the store applies them and adds a feed line; the snapshot's auth is kept as it came", async () => {
    const host = new FakeHost([view("gh", { transport: "http", auth: authStatus({ needs_sign_in: true }) })]);
    const store = new DashboardStore(host);
    await store.start();
    expect(store.servers.gh!.view.auth?.needs_sign_in).toBe(true);
    host.push(stateEvent(1, "gh", 2, { state: "connecting", stage: "connect" }));
    host.push(authEvent(2, "gh", "signed_in", { signed_in: true }));
    expect(store.servers.gh!.view.auth).toMatchObject({ signed_in: true, needs_sign_in: false });
    expect(store.activity[0]).toMatchObject({ text: "signed in", server: "gh" });
    // An auth line between two stages of one attempt does not make the next stage news.
    host.push(stateEvent(3, "gh", 2, { state: "connecting", stage: "initialize" }));
    expect(store.activity.map((a) => a.text)).toEqual(["signed in", "connecting"]);
  });
});

test("a sign-in elsewhere (lifeline login) clears a failed sign-in's error", async () => {
  const host = new FakeHost([view("gh", { transport: "http", state: "retired", reason: "sign_in", auth: authStatus({ needs_sign_in: true }) })]);
  host.failWith = { kind: "sign_in", message: "the browser was closed" };
  const store = new DashboardStore(host);
  await store.start();
  await store.signIn("gh");
  expect(store.signIns.gh).toEqual({ phase: "failed", message: "the browser was closed" });
  host.push(authEvent(1, "gh", "refreshed", { needs_sign_in: true }));
  expect(store.signIns.gh?.phase).toBe("failed");
  host.push(authEvent(2, "gh", "signed_in", { signed_in: true }));
  expect(store.signIns.gh).toBeUndefined();
});
