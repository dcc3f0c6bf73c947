#!/usr/bin/env python3
"""The desktop app in a real window, driven over W3C WebDriver (tauri-driver + WebKitWebDriver).

Run by webdriver.sh, which starts tauri-driver under Xvfb with LIFELINE_CONFIG pointing at a
config of two lifeline-fixture stdio servers: `notes` (healthy) and `flaky` (healthy, with a
5 s first backoff so its countdown can be watched). Everything is asserted through the DOM of
the real UI, by polling with bounded deadlines; nothing waits a fixed time:

  1. the real UI is embedded (not the placeholder page) and both servers are ready;
  2. `flaky`'s `crash` tool is called through the app's `call_tool` command: the row shows
     `reconnecting — attempt 1/N` with a countdown whose displayed value goes down, then
     ready again one generation later;
  3. Reconnect in the detail panel: one generation later, ready;
  4. a second crash is attempt 2 (the budget was kept: the server was not up for the
     stability window); Reset connects at once, before the scheduled retry, and a third crash
     is attempt 1 again: the budget was cleared;
  5. the Profiles view (the config's profile `quiet` is `notes` without `crash`): `default`
     counts the servers' tools as their rows do, `quiet` one fewer than `notes`; its switch
     for `echo` turns it off (the app writes the config) and the count follows;
  6. trust (docs/trust.md): `shifty` serves `echo` with another description than the one a
     client first saw (webdriver.sh pinned that first sight): its row says "1 tool changed"
     and lists one tool fewer than `notes`; its detail panel shows the added instruction;
     Approve there, and the badge goes and `echo` is back among its tools.

It saves target/screenshots/webdriver.png, webdriver-profiles.png and webdriver-trust.png (or
webdriver-failure.png)
and ends the session, which closes the app. Standard library only.
"""

import argparse
import base64
import http.client
import json
import re
import sys
import time
import urllib.parse
from pathlib import Path

POLL_S = 0.1
# A slow 2-core CI machine compiling in parallel: generous, but bounded.
START_S = 90  # WebKitWebDriver up, the window open, the UI loaded
STATE_S = 45  # one state change (a spawn, a handshake, a backoff of at most 12 s)

# One server row as the page shows it. innerText is the rendered text.
ROW_JS = """
const row = document.querySelector(
  `[data-testid="server-row"][data-server="${CSS.escape(arguments[0])}"]`);
if (!row) return null;
const text = (sel) => { const e = row.querySelector(sel); return e ? e.innerText.trim() : null; };
const countdown = row.querySelector('[data-testid="countdown"]');
return {
  state: row.dataset.state,
  generation: Number(row.dataset.generation),
  badge: text('[data-testid="state-badge"]'),
  countdown: countdown ? countdown.querySelector('.value').innerText.trim() : null,
  countdown_ms: countdown ? Number(countdown.dataset.ms) : null,
  restarts: text('[data-testid="restarts"]'),
  tools: parseInt(text('[data-testid="tools"]'), 10),
  held: (row.querySelector('[data-testid="row-held"]') || {textContent: null}).textContent,
};
"""

# The detail panel's review of held tools: each held tool and the text its diff added.
TRUST_JS = """
const t = document.querySelector('[data-testid="detail"] [data-testid="trust"]');
if (!t) return null;
return [...t.querySelectorAll('[data-testid="trust-held"]')].map((h) => ({
  tool: h.dataset.tool,
  added: [...h.querySelectorAll('ins')].map((i) => i.textContent).join(''),
}));
"""

# The Profiles view's list: each profile and its tool count, or null while it is not shown.
PROFILES_JS = """
const d = document.querySelector('[data-testid="profiles-dialog"]');
if (!d) return null;
const profiles = [...d.querySelectorAll('[data-testid="profile"]')];
if (profiles.length === 0) return null;
return Object.fromEntries(profiles.map((p) => [
  p.dataset.profile,
  parseInt(p.querySelector('[data-testid="profile-count"]').innerText, 10),
]));
"""

# The detail panel as the page shows it, or null when it is closed.
DETAIL_JS = """
const d = document.querySelector('[data-testid="detail"]');
if (!d) return null;
const text = (sel) => { const e = d.querySelector(sel); return e ? e.innerText.trim() : null; };
return {
  server: d.dataset.server,
  generation: text('[data-testid="detail-generation"]'),
  attempt: text('[data-testid="detail-attempt"]'),
  badge: text('[data-testid="state-badge"]'),
  cause: text('[data-testid="cause"]'),
};
"""

# What the page is: the dashboard, the placeholder (src-tauri/placeholder), or not loaded yet.
PAGE_JS = """
if (document.querySelector('[data-testid="server-row"]')) return 'dashboard';
if (document.getElementById('servers') && !document.getElementById('app')) return 'placeholder';
return null;
"""

# The crash is a tool call; the call itself fails (the process is gone), which is expected.
CRASH_JS = """
window.__TAURI_INTERNALS__
  .invoke('call_tool', {server: arguments[0], tool: 'crash', args: {code: 1}})
  .catch(() => {});
return true;
"""


class Failed(Exception):
    """The app did not do what the test expected; the message says what and what was seen."""


class WebDriverError(Exception):
    def __init__(self, method, path, error, message):
        super().__init__(f"{method} {path}: {error}: {message}")
        self.error = error


class Session:
    """Raw W3C WebDriver over HTTP, only the calls this test needs."""

    def __init__(self, url):
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname, parsed.port
        self.id = None

    def call(self, method, path, body=None, timeout=60):
        """One command, on a connection of its own. Not urllib: its `Connection: close` reaches
        WebKitWebDriver through tauri-driver 2.1, which then reuses the connection
        WebKitWebDriver closed, and now and then a command is dropped unanswered."""
        data = None if body is None else json.dumps(body).encode()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            headers = {"Content-Type": "application/json; charset=utf-8"}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {}
        value = payload.get("value") if isinstance(payload, dict) else None
        if resp.status >= 400:
            value = value if isinstance(value, dict) else {}
            error = value.get("error", f"HTTP {resp.status}")
            raise WebDriverError(method, path, error, value.get("message", ""))
        return value

    def wait_ready(self):
        """Polls /status until the native driver behind tauri-driver answers ready."""

        def ready():
            try:
                return (self.call("GET", "/status", timeout=5) or {}).get("ready")
            except (OSError, WebDriverError):
                return False

        wait_until("WebKitWebDriver to be ready (GET /status)", ready, START_S)

    def start(self, app):
        caps = {"browserName": "wry", "tauri:options": {"application": str(app)}}
        value = self.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}}, START_S)
        self.id = value["sessionId"]

    def end(self):
        if self.id is not None:
            sid, self.id = self.id, None
            self.call("DELETE", f"/session/{sid}", timeout=30)

    def _s(self, path):
        return f"/session/{self.id}{path}"

    def execute(self, script, *args):
        return self.call("POST", self._s("/execute/sync"), {"script": script, "args": list(args)})

    def find(self, css):
        value = self.call("POST", self._s("/element"), {"using": "css selector", "value": css})
        return next(iter(value.values()))

    def click(self, css):
        """A real pointer click on the element (W3C Element Click: scrolled into view, checked
        to be the element under the pointer)."""
        self.call("POST", self._s(f"/element/{self.find(css)}/click"), {})

    def screenshot(self, path):
        png = base64.b64decode(self.call("GET", self._s("/screenshot")))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png)
        return path


def wait_until(what, probe, limit_s, seen=None):
    """Calls `probe` every POLL_S until it returns something truthy, which it returns. After
    `limit_s` it fails naming `what` and the last thing `seen()` (or `probe`) reported."""
    deadline = time.monotonic() + limit_s
    last = None
    while True:
        try:
            result = probe()
        except WebDriverError as e:
            # A row re-rendered between find and click, say: try again until the deadline.
            result, last = None, str(e)
        if result:
            return result
        if time.monotonic() >= deadline:
            if seen is not None:
                last = seen()
            raise Failed(f"no {what} within {limit_s} s; last seen: {last}")
        time.sleep(POLL_S)


def seconds(countdown):
    """The countdown's displayed value in seconds: "5 s" -> 5, "now" -> 0."""
    if countdown == "now":
        return 0
    m = re.fullmatch(r"(\d+) s", countdown or "")
    if not m:
        raise Failed(f"the countdown shows {countdown!r}, expected 'N s' for a wait under 1 min")
    return int(m.group(1))


class Dashboard:
    """The page's server rows and detail panel, read through the DOM."""

    def __init__(self, wd):
        self.wd = wd

    def row(self, server):
        return self.wd.execute(ROW_JS, server)

    def detail(self):
        return self.wd.execute(DETAIL_JS)

    def wait_row(self, server, what, ok, limit_s=STATE_S):
        """Waits until `server`'s row satisfies `ok(row)`; returns the row."""

        def probe():
            r = self.row(server)
            return r if r is not None and ok(r) else None

        return wait_until(f"{server} {what}", probe, limit_s, seen=lambda: self.row(server))

    def wait_ready(self, server, generation=None):
        want = "ready" if generation is None else f"ready with generation {generation}"
        return self.wait_row(
            server,
            want,
            lambda r: r["state"] == "ready" and generation in (None, r["generation"]),
        )

    def crash(self, server):
        self.wd.execute(CRASH_JS, server)

    def wait_reconnecting(self, server, generation, attempt):
        """Waits for `server` to show it lost `generation` and waits to retry, with a countdown;
        checks the badge says which attempt is next."""
        r = self.wait_row(
            server,
            f"reconnecting after generation {generation} crashed",
            lambda r: r["state"] == "reconnecting"
            and r["generation"] == generation
            and r["countdown"] is not None,
        )
        if not re.fullmatch(rf"reconnecting — attempt {attempt}/\d+", r["badge"] or ""):
            raise Failed(f"{server}'s badge reads {r['badge']!r}; expected attempt {attempt}")
        return r

    def wait_detail(self, what, ok):
        def probe():
            d = self.detail()
            return d if d is not None and ok(d) else None

        return wait_until(f"detail panel {what}", probe, STATE_S, seen=self.detail)


def check_countdown_runs(ui, server, first):
    """Reads the displayed countdown until it changes; the second reading must be lower."""
    before = seconds(first["countdown"])
    changed = ui.wait_row(
        server,
        f"countdown to move from {first['countdown']!r}",
        lambda r: r["state"] != "reconnecting" or r["countdown"] != first["countdown"],
        limit_s=10,
    )
    if changed["state"] != "reconnecting":
        raise Failed(f"{server} left reconnecting before its countdown moved: {changed}")
    after = seconds(changed["countdown"])
    if not after < before:
        raise Failed(f"{server}'s countdown went from {before} s to {after} s, not down")
    say(f"{server}: countdown {before} s -> {after} s")


def scenario(wd, out):
    ui = Dashboard(wd)
    page = wait_until("page (dashboard or placeholder)", lambda: wd.execute(PAGE_JS), START_S)
    if page == "placeholder":
        raise Failed(
            "the app embeds the placeholder page, not the UI: run "
            "`cd ui && npm run build`, then `cargo build -p lifeline-app -p lifeline-it`"
        )

    # 1. Both servers come up.
    ui.wait_ready("notes")
    n = ui.wait_ready("flaky")["generation"]
    say(f"notes and flaky ready (flaky generation {n})")

    # 2. A crash: reconnecting with a running countdown, then ready one generation later.
    ui.crash("flaky")
    first = ui.wait_reconnecting("flaky", n, attempt=1)
    say(f"flaky: {first['badge']}, retry in {first['countdown']}")
    check_countdown_runs(ui, "flaky", first)
    ui.wait_ready("flaky", n + 1)
    say(f"flaky: ready again, generation {n + 1}")

    # 3. Reconnect in the detail panel.
    wd.click('[data-testid="server-row"][data-server="flaky"] .server-name')
    ui.wait_detail(
        "for flaky", lambda d: d["server"] == "flaky" and d["generation"] == f"gen {n + 1}"
    )
    wd.click('[data-testid="detail-reconnect"]')
    ui.wait_detail(f"showing gen {n + 2}", lambda d: d["generation"] == f"gen {n + 2}")
    ui.wait_ready("flaky", n + 2)
    say(f"flaky: Reconnect -> ready, generation {n + 2}")

    # 4. Reset. A second crash within the stability window keeps counting the budget...
    ui.crash("flaky")
    second = ui.wait_reconnecting("flaky", n + 2, attempt=2)
    ui.wait_detail("showing attempt 2", lambda d: (d["attempt"] or "").startswith("2 of"))
    due_s = second["countdown_ms"] / 1000
    say(f"flaky: {second['badge']}, retry in {second['countdown']}; clicking Reset")
    clicked = time.monotonic()
    wd.click('[data-testid="detail-reset"]')
    # ...Reset connects now rather than when the retry was due...
    ui.wait_ready("flaky", n + 3)
    took = time.monotonic() - clicked
    if took >= due_s:
        raise Failed(
            f"flaky was ready {took:.1f} s after Reset, not before its retry (due in {due_s:.1f} s)"
        )
    say(f"flaky: Reset -> ready, generation {n + 3}, {took:.1f} s after the click")
    # ...and cleared the budget: the next crash is attempt 1 again.
    ui.crash("flaky")
    third = ui.wait_reconnecting("flaky", n + 3, attempt=1)
    ui.wait_detail(
        "showing attempt 1 and the cause",
        lambda d: (d["attempt"] or "").startswith("1 of") and d["cause"],
    )
    say("flaky: after Reset the next crash is attempt 1 again")
    # Also lets the buttons' colour transitions finish before the screenshot.
    check_countdown_runs(ui, "flaky", third)

    if ui.row("notes")["state"] != "ready" or ui.row("notes")["generation"] != 1:
        raise Failed(f"notes was disturbed by flaky's restarts: {ui.row('notes')}")
    say(f"screenshot: {wd.screenshot(out / 'webdriver.png')}")

    # 5. The Profiles view, once flaky is back with its tools.
    ui.wait_ready("flaky", n + 4)
    check_profiles(wd, ui, out)

    # 6. A changed tool held for review, approved in the detail panel.
    check_trust(wd, ui, out)


def check_trust(wd, ui, out):
    """`shifty`'s changed `echo` is held: the row says so and lists one tool fewer than
    `notes`; the panel shows the instruction it added; Approve brings it back."""
    notes = ui.row("notes")["tools"]
    r = ui.wait_row(
        "shifty", "ready with 1 tool changed",
        lambda r: r["state"] == "ready" and (r["held"] or "").strip() == "1 tool changed",
    )
    if r["tools"] != notes - 1:
        raise Failed(f"shifty lists {r['tools']} tools with echo held; notes lists {notes}")
    say(f"shifty: {r['held'].strip()}, {r['tools']} tools shown")
    wd.click('[data-testid="server-row"][data-server="shifty"] .server-name')

    def held():
        return wd.execute(TRUST_JS)

    seen = wait_until("shifty's held echo in the detail panel", lambda: held() or None, STATE_S, seen=held)
    if [h["tool"] for h in seen] != ["echo"] or "<IMPORTANT>" not in seen[0]["added"]:
        raise Failed(f"the review shows {seen}; expected echo with the instruction it added")
    say(f"screenshot: {wd.screenshot(out / 'webdriver-trust.png')}")
    wd.click('[data-testid="trust-held"][data-tool="echo"] [data-testid="trust-approve"]')
    ui.wait_row(
        "shifty", "showing echo again, nothing held",
        lambda r: r["held"] is None and r["tools"] == notes,
    )
    say("shifty: Approve -> echo shown again, no tool held")


def check_profiles(wd, ui, out):
    """Opens the Profiles view: each profile's count is its servers' tools as the rows show
    them (less what the config leaves out); a switch turns `echo` off in `quiet`."""
    notes, flaky = ui.row("notes")["tools"], ui.row("flaky")["tools"]
    shifty = ui.row("shifty")["tools"]
    if not (notes > 2 and flaky > 2):
        raise Failed(f"the rows show {notes} and {flaky} tools; expected the fixture's")
    wd.click('[data-testid="open-profiles"]')
    want = {"default": notes + flaky + shifty, "quiet": notes - 1}

    def seen():
        return wd.execute(PROFILES_JS)

    wait_until(f"profiles {want}", lambda: seen() == want, STATE_S, seen=seen)
    say(f"Profiles view: {want}")
    wd.click('[data-testid="profile"][data-profile="quiet"]')
    wd.click('[data-testid="profile-tool"][data-tool="echo"] [role="switch"]')
    want = {"default": notes + flaky + shifty, "quiet": notes - 2}
    wait_until(f"profiles {want} after echo's switch", lambda: seen() == want, STATE_S, seen=seen)
    say(f"quiet without echo: {want['quiet']} tools")
    say(f"screenshot: {wd.screenshot(out / 'webdriver-profiles.png')}")
    wd.click('[data-testid="profiles-close"]')


def say(msg):
    print(f"webdriver: {msg}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--driver", required=True, help="tauri-driver's URL, http://127.0.0.1:PORT")
    ap.add_argument("--app", required=True, type=Path, help="the lifeline-app binary")
    ap.add_argument("--out", required=True, type=Path, help="where screenshots go")
    args = ap.parse_args()

    (args.out / "webdriver-failure.png").unlink(missing_ok=True)  # from an earlier run
    wd = Session(args.driver)
    try:
        wd.wait_ready()
        wd.start(args.app.resolve())
        say(f"session {wd.id}: {args.app}")
        scenario(wd, args.out)
    except (Failed, WebDriverError, OSError) as e:
        print(f"webdriver: FAILED: {e}", file=sys.stderr, flush=True)
        if wd.id is not None:
            try:
                say(f"screenshot: {wd.screenshot(args.out / 'webdriver-failure.png')}")
            except (OSError, WebDriverError) as shot:
                print(f"webdriver: no failure screenshot: {shot}", file=sys.stderr)
        return 1
    finally:
        # DELETE /session closes the app (webdriver.sh checks that it exits and cleans up).
        try:
            wd.end()
        except (OSError, WebDriverError) as e:
            print(f"webdriver: ending the session failed: {e}", file=sys.stderr)
    say("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
