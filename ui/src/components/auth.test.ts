// Sign in and Sign out in the dashboard, against a FakeHost: Sign in leads on the row and in
// the detail panel exactly when a person must sign in, its pending state and its error, Sign
// out asks first, the Sign-in section's facts, and no token-like value ever on screen.

import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { describe, expect, test } from "vitest";
import App from "../App.svelte";
import type { AuthStatus, ServerView } from "../host/types";
import { DashboardStore } from "../lib/store.svelte";
import { FakeHost } from "../test/fake-host";
import { authEvent, authStatus, failure, iso, view } from "../test/fixtures";
import DetailPanel from "./DetailPanel.svelte";
import ServerList from "./ServerList.svelte";

const NEEDS = authStatus({ needs_sign_in: true });
const SIGN_IN_CAUSE = failure({
  kind: "sign_in",
  status: 401,
  message: "sign-in needed: the server uses OAuth and Lifeline holds no valid token for it (docs/auth.md)",
});

function needing(name: string, over: Partial<ServerView> = {}): ServerView {
  return view(name, { transport: "http", state: "retired", reason: "sign_in", cause: SIGN_IN_CAUSE, auth: NEEDS, tools: [], ...over });
}

async function storeWith(host: FakeHost) {
  const store = new DashboardStore(host);
  await store.start();
  return store;
}

const rowOf = (name: string) => screen.getAllByTestId("server-row").find((r) => r.dataset.server === name)!;

describe("Sign in on the row", () => {
  test("leads where a person must sign in, and only there", async () => {
    const host = new FakeHost([
      needing("gh"),
      view("retired-no-auth", { transport: "http", state: "retired", reason: "sign_in", auth: null }),
      view("linear", { transport: "http", state: "retired", reason: "auth", auth: authStatus() }),
      view("ok", { transport: "http", auth: authStatus({ signed_in: true }) }),
      view("fs"),
    ]);
    const store = await storeWith(host);
    render(ServerList, { store, onopen: () => {} });
    const signIn = (name: string) => within(rowOf(name)).queryByTestId("row-sign-in");
    expect(signIn("gh")).not.toBeNull();
    expect(signIn("retired-no-auth")).not.toBeNull();
    for (const name of ["linear", "ok", "fs"]) {
      expect(signIn(name), name).toBeNull();
      expect(within(rowOf(name)).getByTestId("row-reconnect")).toBeTruthy();
    }
    // Reconnecting cannot help: Sign in takes its place.
    expect(within(rowOf("gh")).queryByTestId("row-reconnect")).toBeNull();
  });

  test("shows the pending state while the browser flow runs; the auth event clears it", async () => {
    const host = new FakeHost([needing("gh")]);
    let finish!: () => void;
    host.signInGate = new Promise((r) => (finish = r));
    const store = await storeWith(host);
    render(ServerList, { store, onopen: () => {} });
    const button = within(rowOf("gh")).getByTestId("row-sign-in") as HTMLButtonElement;
    await fireEvent.click(button);
    expect(host.signIn).toHaveBeenCalledWith("gh");
    await waitFor(() => expect(button.textContent).toContain("Signing in…"));
    expect(button.disabled).toBe(true);
    expect(button.title).toBe("Waiting for you to finish signing in in your browser…");
    finish();
    host.push(authEvent(1, "gh", "signed_in", { signed_in: true }));
    await waitFor(() => expect(within(rowOf("gh")).queryByTestId("row-sign-in")).toBeNull());
    expect(store.signIns.gh).toBeUndefined();
  });
});

describe("Sign in in the detail panel", () => {
  test("pending, then the error; the cause advises signing in", async () => {
    const host = new FakeHost([needing("gh")]);
    let finish!: () => void;
    host.signInGate = new Promise((r) => (finish = r));
    const store = await storeWith(host);
    render(DetailPanel, { store, server: "gh", onclose: () => {} });
    expect(screen.getByTestId("cause-advice").textContent).toMatch(/^Sign in/);
    expect(screen.getByTestId("cause-advice").textContent).not.toContain("Authorization header");
    expect(screen.getByTestId("detail-sign-in").className).toContain("primary");
    expect(screen.getByTestId("detail-reconnect").className).not.toContain("primary");
    expect(screen.getByTestId("auth-summary").textContent).toContain("Sign-in needed");

    await fireEvent.click(screen.getByTestId("detail-sign-in"));
    expect(await screen.findByTestId("auth-pending")).toBeTruthy();
    expect(screen.getByTestId("auth-pending").textContent).toBe("Waiting for you to finish signing in in your browser…");
    expect((screen.getByTestId("detail-sign-in") as HTMLButtonElement).disabled).toBe(true);

    host.failWith = { kind: "sign_in", message: "the sign-in was not finished within 5 minutes; sign in again" };
    finish();
    const error = await screen.findByTestId("auth-error");
    expect(error.textContent).toBe("The sign-in failed: the sign-in was not finished within 5 minutes; sign in again");
    expect(screen.queryByTestId("auth-pending")).toBeNull();
    // Try again: the button is back.
    host.failWith = null;
    host.signInGate = null;
    await fireEvent.click(screen.getByTestId("detail-sign-in"));
    await waitFor(() => expect(screen.queryByTestId("auth-error")).toBeNull());
    expect(host.signIn).toHaveBeenCalledTimes(2);
    expect(store.servers.gh!.view.auth?.signed_in).toBe(true);
  });

  test("a static credential the server refused keeps its own advice and no Sign in", async () => {
    const cause = failure({ kind: "auth", status: 401, message: "POST /mcp answered 401 Unauthorized" });
    const host = new FakeHost([view("linear", { transport: "sse", state: "retired", reason: "auth", cause, auth: null })]);
    const store = await storeWith(host);
    render(DetailPanel, { store, server: "linear", onclose: () => {} });
    expect(screen.getByTestId("cause-advice").textContent).toContain("Authorization header");
    expect(screen.queryByTestId("detail-sign-in")).toBeNull();
    expect(screen.queryByTestId("auth")).toBeNull();
  });

  test("a stdio server has no Sign-in section", async () => {
    const store = await storeWith(new FakeHost([view("fs")]));
    render(DetailPanel, { store, server: "fs", onclose: () => {} });
    expect(screen.queryByTestId("auth")).toBeNull();
    expect(screen.queryByTestId("detail-sign-in")).toBeNull();
  });

  test("a server not signed in (and not yet needing it) offers Sign in in its section", async () => {
    const host = new FakeHost([view("gh", { transport: "http", state: "retrying", auth: authStatus() })]);
    const store = await storeWith(host);
    render(DetailPanel, { store, server: "gh", onclose: () => {} });
    expect(screen.queryByTestId("detail-sign-in")).toBeNull();
    expect(screen.getByTestId("auth-summary").textContent).toContain("Not signed in");
    await fireEvent.click(screen.getByTestId("auth-sign-in"));
    expect(host.signIn).toHaveBeenCalledWith("gh");
  });
});

describe("the Sign-in section of a signed-in server", () => {
  const SIGNED: AuthStatus = authStatus({
    signed_in: true,
    issuer: "https://github.com/login/oauth",
    scopes: ["repo", "read:org"],
    expires_at: iso(Date.now() + 45 * 60_000),
    signed_in_at: iso(Date.now() - 2 * 3_600_000),
    last_refresh_at: iso(Date.now() - 10 * 60_000),
    last_refresh_ok: false,
  });

  test("lists issuer, scopes, expiry, sign-in time and the last refresh's outcome", async () => {
    const store = await storeWith(new FakeHost([view("gh", { transport: "http", auth: SIGNED })]));
    render(DetailPanel, { store, server: "gh", onclose: () => {} });
    expect(screen.getByTestId("auth-summary").textContent).toContain("Signed in");
    expect(screen.getByTestId("auth-issuer").textContent).toBe("https://github.com/login/oauth");
    expect(screen.getByTestId("auth-scopes").textContent).toBe("repo read:org");
    expect(screen.getByTestId("auth-expires").textContent).toMatch(/^in 4\d m \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)$/);
    expect(screen.getByTestId("auth-signed-in").textContent).toMatch(/^2 h ago \(/);
    expect(screen.getByTestId("auth-refresh").textContent).toMatch(/^failed, 10 m ago \(/);
    expect(screen.queryByTestId("detail-sign-in")).toBeNull();
    expect(screen.queryByTestId("auth-sign-in")).toBeNull();
  });

  test("Sign out asks first; Cancel keeps the sign-in", async () => {
    const host = new FakeHost([view("gh", { transport: "http", auth: SIGNED })]);
    const store = await storeWith(host);
    render(DetailPanel, { store, server: "gh", onclose: () => {} });
    await fireEvent.click(screen.getByTestId("auth-sign-out"));
    expect(screen.getByTestId("auth").textContent).toContain("Sign out of gh?");
    await fireEvent.click(screen.getByText("Cancel"));
    expect(host.signOut).not.toHaveBeenCalled();
    await fireEvent.click(screen.getByTestId("auth-sign-out"));
    await fireEvent.click(screen.getByTestId("auth-confirm-sign-out"));
    expect(host.signOut).toHaveBeenCalledWith("gh");
    host.push(authEvent(1, "gh", "signed_out", { issuer: "https://github.com/login/oauth" }));
    await waitFor(() => expect(screen.getByTestId("auth-summary").textContent).toContain("Not signed in"));
    expect(screen.queryByTestId("auth-sign-out")).toBeNull();
  });

  test("a failed sign-out is a banner naming the server", async () => {
    const host = new FakeHost([view("gh", { transport: "http", auth: SIGNED })]);
    host.failWith = { kind: "transport", message: "the revocation endpoint could not be reached" };
    const store = await storeWith(host);
    render(DetailPanel, { store, server: "gh", onclose: () => {} });
    await fireEvent.click(screen.getByTestId("auth-sign-out"));
    await fireEvent.click(screen.getByTestId("auth-confirm-sign-out"));
    await waitFor(() => expect(store.banners).toHaveLength(1));
    expect(store.banners[0]).toMatchObject({ title: "Sign out of gh", message: "the revocation endpoint could not be reached" });
  });
});

describe("no token on screen", () => {
  // Planted where a careless shell could put one: extra fields of the status and the event.
  const CANARY = "ya29.CANARY-access-token-7f3a";
  const REFRESH_CANARY = "1//CANARY-refresh-token-9c1e";

  test("the row, the detail panel and the feed render none of a status's stray fields", async () => {
    const leaky = {
      ...authStatus({ signed_in: true, scopes: ["repo"], expires_at: iso(Date.now() + 60_000) }),
      access_token: CANARY,
      refresh_token: REFRESH_CANARY,
      token: CANARY,
    } as AuthStatus;
    const host = new FakeHost([view("gh", { transport: "http", auth: leaky }), needing("linear")]);
    const store = await storeWith(host);
    render(App, { store, initialSelection: "gh" });
    const event = authEvent(1, "gh", "refreshed", { signed_in: true });
    Object.assign((event as { auth: object }).auth, { access_token: CANARY, refresh_token: REFRESH_CANARY });
    host.push(event);
    host.push(authEvent(2, "linear", "sign_in_needed", { needs_sign_in: true }, { kind: "sign_in", message: "sign-in needed" }));
    await waitFor(() => expect(screen.getByTestId("activity").textContent).toContain("token refreshed"));
    expect(screen.getByTestId("activity").textContent).toContain("sign-in needed");
    expect(screen.getByTestId("auth")).toBeTruthy();
    const html = document.documentElement.outerHTML;
    expect(html).not.toContain("CANARY");
    expect(html).not.toContain(CANARY);
    expect(html).not.toContain(REFRESH_CANARY);
  });
});

test("a sign-in that fails from the row is also a banner (no detail is open to show it)", async () => {
  const host = new FakeHost([needing("gh")]);
  host.failWith = { kind: "access_denied", message: "the authorization server answered access_denied: the person declined" };
  const store = await storeWith(host);
  render(ServerList, { store, onopen: () => {} });
  await fireEvent.click(within(rowOf("gh")).getByTestId("row-sign-in"));
  await waitFor(() => expect(store.banners).toHaveLength(1));
  expect(store.banners[0]).toMatchObject({ tone: "error", title: "Sign in to gh", kind: "access_denied" });
  const button = within(rowOf("gh")).getByTestId("row-sign-in") as HTMLButtonElement;
  expect(button.disabled).toBe(false);
  expect(button.title).toContain("The last sign-in failed: the authorization server answered access_denied");
});
