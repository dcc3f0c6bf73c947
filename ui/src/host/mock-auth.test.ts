// The mock's sign-in (mock-auth.ts): enough of what the core does for the browser-only dev
// mode and the e2e to exercise Sign in and Sign out, and the recorded status at the load.

import { describe, expect, test } from "vitest";
import { ManualClock, T0 } from "../test/fixtures";
import { MockHost, mockOptionsFromUrl } from "./mock";
import { BROWSER_MS, NO_SIGN_IN } from "./mock-auth";
import type { Event } from "./types";

const byName = async (m: MockHost) => Object.fromEntries((await m.snapshot()).map((v) => [v.server, v]));
const authChanges = (m: MockHost, server: string) =>
  m
    .events()
    .filter((e): e is Extract<Event, { type: "auth" }> => e.type === "auth" && e.server === server)
    .map((e) => e.change);

describe("the mock's sign-in", () => {
  test("at load, each HTTP row has the recorded status and stdio rows none", async () => {
    const s = await byName(new MockHost({ clock: new ManualClock(T0) }));
    expect(s.filesystem!.auth).toBeNull();
    expect(s.sqlite!.auth).toBeNull();
    expect(s.github!.auth).toMatchObject({ signed_in: false, needs_sign_in: false });
  });

  test("?mock&signin=linear starts linear retired for sign-in", async () => {
    const opts = mockOptionsFromUrl(new URL("http://localhost/?mock&signin=linear,nope"));
    expect(opts.signIn).toEqual(["linear", "nope"]);
    const m = new MockHost({ ...opts, clock: new ManualClock(T0) });
    const s = await byName(m);
    expect(s.linear).toMatchObject({ state: "retired", reason: "sign_in" });
    expect(s.linear!.cause).toMatchObject({ kind: "sign_in", status: 401 });
    expect(s.linear!.auth).toMatchObject({ needs_sign_in: true, signed_in: false });
    expect(authChanges(m, "linear")).toEqual(["sign_in_needed"]);
  });

  test("Sign in waits for the browser, then signs in and connects", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock, signIn: ["linear"] });
    const gen = (await byName(m)).linear!.generation;
    let done = false;
    const signing = m.signIn("linear").then((a) => {
      done = true;
      return a;
    });
    await Promise.resolve();
    expect(done).toBe(false);
    expect((await byName(m)).linear!.auth?.signed_in).toBe(false);
    clock.advance(BROWSER_MS);
    const status = await signing;
    expect(status).toMatchObject({ signed_in: true, needs_sign_in: false });
    expect(status.issuer).toMatch(/^https:\/\//);
    expect(Date.parse(status.expires_at!)).toBeGreaterThan(clock.now());
    const linear = (await byName(m)).linear!;
    expect(linear).toMatchObject({ state: "ready", auth: status });
    expect(linear.generation).toBe(gen + 1);
    expect(linear.tools.length).toBeGreaterThan(0);
    expect(authChanges(m, "linear")).toEqual(["sign_in_needed", "signed_in"]);
    expect(m.calls).toContainEqual({ command: "auth_sign_in", server: "linear" });
  });

  test("Sign out signs out, then the next attempt needs sign-in", async () => {
    const clock = new ManualClock(T0);
    const m = new MockHost({ clock });
    const signing = m.signIn("github");
    clock.advance(BROWSER_MS);
    await signing;
    expect((await byName(m)).github!.state).toBe("ready");
    expect(await m.signOut("github")).toBe(true);
    const gh = (await byName(m)).github!;
    expect(gh).toMatchObject({ state: "retired", reason: "sign_in" });
    expect(gh.auth).toMatchObject({ signed_in: false, needs_sign_in: true });
    expect(gh.auth!.issuer).toBe("https://auth.github.example.com");
    expect(authChanges(m, "github")).toEqual(["signed_in", "signed_out", "sign_in_needed"]);
    expect(await m.signOut("github")).toBe(false);
  });

  test("a stdio server does not sign in, as the core says", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    await expect(m.signIn("filesystem")).rejects.toEqual(NO_SIGN_IN);
    await expect(m.signOut("sqlite")).rejects.toEqual(NO_SIGN_IN);
    await expect(m.signIn("nope")).rejects.toMatchObject({ kind: "unknown_server" });
  });

  test("?mock&fail=auth_sign_in makes Sign in fail", async () => {
    const m = new MockHost({ clock: new ManualClock(T0), fail: ["auth_sign_in"] });
    await expect(m.signIn("github")).rejects.toMatchObject({ kind: "supervisor_stopped" });
  });
});
