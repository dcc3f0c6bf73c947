"""Writes docs/benchmarks.md and its SVG charts from the JSON record (bench/run.py).

The charts are drawn here, by a few lines of SVG, so the report needs nothing installed and
nothing fetched. Every number in the Markdown comes from the record; the prose is the method.
"""

import html
from pathlib import Path

COLORS = {"lifeline": "#2f6fdf", "typescript": "#d98c1f", "python": "#3a9a5b", "rust": "#b0413e"}


def bar_chart(title, unit, groups, clients, value):
    """A horizontal grouped bar chart: one group per cell, one bar per client."""
    bar, gap, left, width = 14, 10, 230, 420
    rows = [(g, c, value(g, c)) for g in groups for c in clients]
    top = max((v for _, _, v in rows if v is not None), default=1) or 1
    height = 40 + len(groups) * (len(clients) * bar + gap) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 90}" height="{height}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="4" y="16" font-size="13" font-weight="bold">{html.escape(title)}</text>']
    y = 30
    for g in groups:
        out.append(f'<text x="4" y="{y + len(clients) * bar / 2 + 4}">{html.escape(g)}</text>')
        for c in clients:
            v = value(g, c)
            if v is not None:
                w = max(1, round(v / top * width))
                out.append(f'<rect x="{left}" y="{y}" width="{w}" height="{bar - 2}" '
                           f'fill="{COLORS.get(c, "#888")}"><title>{c}: {v} {unit}</title></rect>')
                out.append(f'<text x="{left + w + 4}" y="{y + bar - 4}">{v:g}</text>')
            y += bar
        y += gap
    x = 4
    for c in clients:
        out.append(f'<rect x="{x}" y="{y + 4}" width="10" height="10" fill="{COLORS.get(c, "#888")}"/>'
                   f'<text x="{x + 14}" y="{y + 13}">{c}</text>')
        x += 90
    out.append(f'<text x="{left}" y="{y + 13}">{html.escape(unit)}</text></svg>')
    return "\n".join(out) + "\n"


def cell(r):
    return f'{r["server"]} {r["transport"]} c={r["concurrency"]}'


def what_dominates(pr):
    """The profile of the call path (the `profile` record, written by hand from perf)."""
    if not pr:
        return []
    loaded = " on a LOADED machine" if pr.get("loaded_machine") else ""
    out = ["", "## What dominates", "",
           f"Profiled {pr['measured_at']}{loaded} (load average {pr['loadavg']}): "
           f"{pr['tool']}. Shares are of the client's samples, by the innermost frame.", ""]
    for c in pr["cells"]:
        extra = []
        if "context_switches_per_call" in c:
            extra.append(f"{c['context_switches_per_call']} context switches per call")
        if "sys_share_of_cpu" in c:
            extra.append(f"{round(c['sys_share_of_cpu'] * 100)} % of its CPU time in the kernel")
        if "server_samples" in c:
            extra.append(f"the fixture server took {c['server_samples']} samples to the "
                         f"client's {c['samples']}")
        out += [f"**{c['transport']}**: about {c['client_cpu_us_per_call']} µs of client CPU "
                f"per call" + (f"; {'; '.join(extra)}" if extra else "") + ".", "",
                "| where | share |", "|---|---:|"]
        out += [f"| {k} | {v} % |" for k, v in
                sorted(c["breakdown_pct"].items(), key=lambda kv: -kv[1])]
        out.append("")
    out += ["Most of a small call's cost is not Lifeline's code: it is the kernel moving one "
            "message across threads and processes (context switches, futex wake-ups, the pipe "
            "or the loopback socket) and, over HTTP, hyper's HTTP/1 framing. When this was "
            "profiled a call crossed several tasks (caller, supervisor, the call's task, the "
            "transport's reader, the session), each hop a possible wake-up on another worker "
            "thread; since then a call on a ready server runs in the caller's task (the "
            "supervisor's CallLane), which removed two of them, and the call-path table above "
            "is measured with that. JSON and allocation are a tenth to a sixth of the client's "
            "time."]
    if pr.get("fixed"):
        out += ["", "Fixed after this profile:", ""]
        out += [f"- {f['what']} ({f['where']})." for f in pr["fixed"]]
    m = pr.get("fixed_measured")
    if m:
        out += ["", f"Measured with a {m['case']}: client CPU per 10,000 calls "
                f"{m['cpu_ms_per_10k_before']} → {m['cpu_ms_per_10k_after']} ms, p50 "
                f"{m['p50_us_before']} → {m['p50_us_after']} µs; stdio: {m['stdio']}."]
    return out


# The app's total RSS (app + WebKit) with 20 servers and its window open, before the tray
# work (issue 16: "~540 MB"); a window-open figure must stay under it.
OPEN_RSS_BEFORE_MB = 540


# Issue 14's targets for the gateway: what `lifeline connect` may add to a small stdio call
# (the TypeScript SDK client as the host, on the fixture), and one bridge's memory.
GATEWAY_ADDED_P50_US = 150
GATEWAY_P99_RATIO = 1.5
BRIDGE_RSS_MB = 10


def gateway_targets(gw, row):
    cells = [c for c in gw.get("cells") or [] if c["server"] == "fixture"]
    if not cells:
        return [row("the gateway adds at most 150 µs p50 on the fixture over stdio", None, "")]
    name = lambda c: f"c={c['concurrency']}"
    out = [row(f"the gateway adds at most {GATEWAY_ADDED_P50_US} µs p50 (fixture, stdio, "
               "TypeScript host)", all(c["added_p50_us"] <= GATEWAY_ADDED_P50_US for c in cells),
               "; ".join(f"{name(c)}: +{c['added_p50_us']} µs" for c in cells)),
           row(f"... and keeps p99 within {GATEWAY_P99_RATIO}x of a direct connection",
               all(c["p99_ratio"] <= GATEWAY_P99_RATIO for c in cells),
               "; ".join(f"{name(c)}: {c['p99_ratio']}x" for c in cells))]
    bridge = gw.get("bridge") or {}
    if "peak_rss_kb" in bridge:
        mb = bridge["peak_rss_kb"] * 1.024 / 1000
        out.append(row(f"one bridge process under {BRIDGE_RSS_MB} MB RSS", mb < BRIDGE_RSS_MB,
                       f"{round(mb, 1)} MB peak (in-process supervisor)"))
    return out


# Issue 25's target for `lifeline serve`: a call on a kept-alive connection within 1 ms p50
# of the same call made to the server direct.
SERVE_ADDED_P50_US = 1000


def serve_targets(sv, row):
    if "added_p50_us" not in sv:
        return [row("a kept-alive call through `lifeline serve` within 1 ms p50 of a direct one",
                    None, "")]
    return [row("a kept-alive call through `lifeline serve` within 1 ms p50 of a direct one",
                sv["added_p50_us"] <= SERVE_ADDED_P50_US, f"+{sv['added_p50_us']} µs")]


def serve_section(sv):
    cells = sv.get("cells") or []
    if not cells:
        return []
    out = ["", "## Through `lifeline serve`", "",
           "A small `tools/call` (`echo`) on the fixture's Streamable HTTP server, one at a time, "
           "by Python's http.client: to the server direct or through `lifeline serve`, on one "
           "HTTP connection kept alive for every call (as the SDK clients do) or a new one per "
           "call (as curl does). The four alternate, run by run; medians of the runs "
           "(bench/serve.py; alone: `make bench-serve`).", "",
           "| path | connection | p50 µs | p99 µs | calls/s |", "|---|---|---:|---:|---:|"]
    for c in cells:
        out.append(f'| {c["path"]} | {c["connection"]} | {c["p50_us"]:g} | {c["p99_us"]:g} | '
                   f'{c["calls_per_s"]:g} |')
    out += ["", f"Kept alive, `lifeline serve` adds {sv['added_p50_us']:g} µs p50 to a direct call."]
    return out


def gateway_section(gw):
    cells = gw.get("cells") or []
    if not cells:
        return []
    out = ["", "## Through the gateway", "",
           "The same small `tools/call` by the TypeScript SDK client acting as the host (an AI "
           "client's place), to the server spawned directly (`direct`) or through `lifeline "
           "connect NAME --no-attach` (`through`: the bridge runs the server's supervisor in "
           "its own process, as when the app is not running). The two alternate, run by run; "
           "medians of the runs.", "",
           "| server | conc. | direct p50 µs | through p50 µs | added p50 µs | direct p99 µs | "
           "through p99 µs | p99 ratio | direct calls/s | through calls/s |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in cells:
        d, t = c["direct"], c["through"]
        out.append(f'| {c["server"]} | {c["concurrency"]} | {d["p50_us"]:g} | {t["p50_us"]:g} | '
                   f'{c["added_p50_us"]:g} | {d["p99_us"]:g} | {t["p99_us"]:g} | '
                   f'{c["p99_ratio"]:g} | {d["calls_per_s"]:g} | {t["calls_per_s"]:g} |')
    b = gw.get("bridge") or {}
    if b:
        out += ["", f"One bridge (`lifeline connect`, its supervisor in-process) driven by a "
                f"minimal host through {b['calls']} calls, one at a time: peak RSS "
                f"{b['peak_rss_kb']} KiB ({round(b['peak_rss_kb'] * 1.024 / 1000, 1)} MB), "
                f"{b['cpu_ms_per_10k']} ms of CPU per 10,000 calls (the server it supervises "
                "is a process of its own and not counted). Attached to the app, a bridge "
                "only copies bytes and is smaller still."]
    return out


# Issue 27's targets for search mode: the ranking behind `find_tools` over 1,000 tools, and
# the host's first tool list in search mode against the full one (20 servers x 25 tools).
SEARCH_P50_US = 1000
SEARCH_TOKEN_RATIO = 0.05


def search_targets(se, row):
    s, t = se.get("search") or {}, se.get("tokens") or {}
    if not s:
        return [row("`find_tools`' ranking p50 at most 1 ms over 1,000 tools", None, ""),
                row("search mode's first tool list at most 5 % of the full list's tokens",
                    None, "")]
    return [row(f"`find_tools`' ranking (`Index::search`) p50 at most 1 ms over "
                f"{s['tools']:,} tools", s["p50_us"] <= SEARCH_P50_US,
                f"{s['p50_us']:g} µs (p99 {s['p99_us']:g} µs)"),
            row(f"search mode's first tool list at most {SEARCH_TOKEN_RATIO * 100:g} % of the "
                f"full list's tokens ({t['servers']} servers × {t['tools_per_server']} tools)",
                t["ratio"] <= SEARCH_TOKEN_RATIO,
                f"{t['ratio'] * 100:.2f} % (≈{t['search_tokens']:,} of ≈{t['full_tokens']:,} "
                "tokens)")]


# Issue 28's target: hashing and checking 1,000 tools against their pins.
PINS_P50_MS = 5


def pins_targets(se, row):
    p = se.get("pins") or {}
    if not p:
        return [row("hashing and checking 1,000 tools against their pins at most 5 ms", None, "")]
    return [row(f"hashing and checking {p['tools']:,} tools against their pins "
                f"(`pins::review`) p50 at most {PINS_P50_MS} ms", p["p50_ms"] <= PINS_P50_MS,
                f"{p['p50_ms']:g} ms (p99 {p['p99_ms']:g} ms)")]


def pins_section(se):
    p = se.get("pins") or {}
    if not p:
        return []
    return ["", "## Tool pins", "",
            "The check every list a server gives goes through (`lifeline_core::pins::review`; "
            f"bench/src/bin/search.rs): the search section's {p['tools']:,} tools against their "
            f"pins, {p['reviews']:,} reviews after one unmeasured one; medians of "
            f"{se.get('runs', 1)} run(s). A definition that is its pin's value for value is "
            "approved without hashing; any other has its RFC 8785 digest taken and compared. "
            "Taking every digest anew (every definition changed), the first sight (digests and "
            "pins made) and the flags (`pins::flags`) are below: they run once per server or "
            "per change, not per list.", "",
            "| what | value |", "|---|---:|",
            f"| one review of {p['tools']:,} tools, p50 ms | {p['p50_ms']:g} |",
            f"| one review, p99 ms | {p['p99_ms']:g} |",
            f"| every digest of {p['tools']:,} tools anew, ms | {p.get('hash_ms', '—')} |",
            f"| first sight of {p['tools']:,} tools, ms | {p['first_sight_ms']:g} |",
            f"| flags of {p['tools']:,} tools, ms ({p['flags']:,} flags) | {p['flags_ms']:g} |"]


def search_section(se):
    s, t = se.get("search") or {}, se.get("tokens") or {}
    if not s:
        return []
    return ["", "## Search mode", "",
            f"The ranking behind `find_tools` (`lifeline_core::gateway::search`; "
            f"bench/src/bin/search.rs): {s['tools']:,} tools made from the 50 real tools of "
            "crates/core/tests/data/real-tools.json (each under 20 server names, its "
            f"description given a word of its copy), `Index::search(query, {s['limit']})` for "
            f"each of the {s['queries']} labelled queries, {s['searches']:,} searches after one "
            f"unmeasured round; medians of {se.get('runs', 1)} run(s). The tokens are an "
            "approximation, the compact JSON's bytes ÷ 4 (no host's tokenizer is public); the "
            "ratio does not depend on the divisor. The full list is the `tools/list` result of "
            f"{t['servers']} servers × {t['tools_per_server']} tools (the real tools in turn, "
            "named `server__tool`); search mode's is its three meta-tools, `find_tools`, "
            "`call_tool` and `describe_tool`, as the bench writes them until the endpoint "
            "serves them.", "",
            "| what | value |", "|---|---:|",
            f"| one search over {s['tools']:,} tools, p50 µs | {s['p50_us']:g} |",
            f"| one search, p99 µs | {s['p99_us']:g} |",
            f"| building the index, ms | {s['build_ms']:g} |",
            f"| full `tools/list`: bytes, ≈ tokens | {t['full_bytes']:,}, {t['full_tokens']:,} |",
            f"| search mode's: bytes, ≈ tokens | {t['search_bytes']:,}, {t['search_tokens']:,} |",
            f"| search mode's share of the full list's tokens | {t['ratio'] * 100:.2f} % |"]


# Issue 27's targets for the aggregated endpoint (20 servers x 25 tools): its `tools/list`,
# and what a call through it adds over the per-server bridge; judged on bench-host, the
# minimal host (bench/aggregate.py), the TypeScript SDK host's figures beside them.
AGGREGATE_LIST_P50_US = 2000
AGGREGATE_ADDED_P50_US = 30


def aggregate_targets(ag, row):
    size = f"{ag.get('servers', 20)} servers × {ag.get('tools_per_server', 25)} tools"
    out = []
    cells = {(c["host"], c["request"], c["path"]): c for c in ag.get("cells") or []}
    ts_list = cells.get(("typescript", "tools/list", "all"))
    ts = (f"; the TypeScript SDK's listTools {ts_list['p50_us']:g} µs, its validation "
          "included" if ts_list else "")
    cpu = (cells.get(("host", "tools/list", "all")) or {}).get("server_cpu_us_per_call")
    ts = (f"; the bridge's CPU {cpu:g} µs a list" if cpu is not None else "") + ts
    out.append(row(f"the aggregated `tools/list` p50 at most {AGGREGATE_LIST_P50_US / 1000:g} ms "
                   f"({size})", ag["list_p50_us"] <= AGGREGATE_LIST_P50_US if "list_p50_us" in ag
                   else None,
                   f"{ag['list_p50_us']:g} µs (p99 {ag['list_p99_us']:g} µs){ts}"
                   if "list_p50_us" in ag else ""))
    added = ag.get("added") or {}
    host, sdk = added.get("host"), added.get("typescript")
    detail = (f"{host['p50_us']:+g} µs p50, {host['p99_us']:+g} µs p99" if host else "")
    if sdk:
        detail += (f"; TypeScript SDK host {sdk['p50_us']:+g} µs p50, {sdk['p99_us']:+g} µs p99")
    out.append(row(f"a call through the aggregate adds at most {AGGREGATE_ADDED_P50_US} µs p50 "
                   "over `lifeline connect NAME`", host["p50_us"] <= AGGREGATE_ADDED_P50_US
                   if host else None, detail))
    return out


def aggregate_section(ag):
    cells = ag.get("cells") or []
    if not cells:
        return []
    through = {"one": f"`connect {ag['called']}`", "all": "`connect --all`"}
    hosts = {"host": "bench-host", "typescript": "TypeScript SDK"}
    out = ["", "## The aggregated endpoint", "",
           f"`lifeline connect --all` in front of {ag['servers']} `lifeline-fixture stdio` "
           f"servers of {ag['tools_per_server']} tools each, against `lifeline connect "
           f"{ag['called']}` in front of one of them (same config, same fixture; release "
           "builds, `--no-attach`), one request at a time by the host over stdio. `bench-host` "
           "is a minimal host (bench/src/bin/host.rs: JSON-RPC lines on blocking pipes, timed "
           "from writing the request to reading the answer's last byte); the TypeScript SDK "
           "client is the gateway section's host, its own cost included (for a list, its "
           "validation of every tool). bench-host drives both bridges side by side, one "
           "request to each in turn; the TypeScript host one bridge, then the other. Fresh "
           f"bridges every run; medians of {ag['runs']} run(s) of {ag['calls']:,} calls or "
           f"{ag['lists']:,} lists "
           "(bench/aggregate.py). Bridge CPU is the `lifeline connect` process's own user+system "
           "time (its threads, not the servers) over the measured requests, per request, read "
           "by bench-host from /proc. Load average "
           f"{ag['loadavg_before'][0]} before the section, {ag['loadavg_after'][0]} after.", "",
           "| host | request | through | p50 µs | p99 µs | bridge CPU µs each | tools "
           "| answer bytes |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for c in cells:
        out.append(f"| {hosts[c['host']]} | `{c['request']}` | {through[c['path']]} | {c['p50_us']:g} | "
                   f"{c['p99_us']:g} | {c.get('server_cpu_us_per_call', '')} | "
                   f"{c.get('tools', '')} | {c.get('answer_bytes', '')} |")
    added = ag.get("added") or {}
    if added:
        out += ["", "A call through `connect --all` (as `" + ag["called"] + "__echo`) against the "
                "same call through `connect " + ag["called"] + "`: " + "; ".join(
                    f"{hosts[h]}, {a['p50_us']:+g} µs p50 and {a['p99_us']:+g} µs p99"
                    for h, a in added.items()) + "."]
    parse = next((c.get("parse_p50_us") for c in cells if c["host"] == "host"
                  and c["request"] == "tools/list" and c["path"] == "all"), None)
    if parse is not None:
        out += ["", f"bench-host's own parse of the 500-tool answer (serde_json, not in the "
                f"figures above) takes {parse:g} µs p50."]
    return out


def aggregate_profile(pr):
    """Where the aggregate's `tools/list` spends its time (the `aggregate_profile` record,
    written by hand from perf)."""
    if not pr:
        return []
    out = ["", "### Where a list's time goes", "",
           f"Profiled {pr['measured_at']} (load average {pr['loadavg'][0]}): {pr['tool']}; "
           f"{pr['build']}. Each sample is put under the first heading of the table whose "
           f"code is on its stack; {pr['allocator_pct']} % of all samples are in glibc's "
           "malloc and free, under every heading.", "",
           "| where | share |", "|---|---:|"]
    out += [f"| {k} | {v} % |" for k, v in pr["breakdown_pct"].items()]
    ex = pr.get("experiment")
    if ex:
        out += ["", ex["what"], "", "| build | p50 µs | bridge CPU µs a list |",
                "|---|---:|---:|"]
        out += [f"| {r['build']} | {r['p50_us']:g} | {r['cpu_us']:g} |" for r in ex["rows"]]
    if pr.get("fixed"):
        # What was done about it since, as written when it was (the record keeps it).
        out += ["", pr["fixed"]]
    elif pr.get("fix"):
        out += ["", "The fix (crates/core/src/gateway/aggregate/, not made here):", ""]
        out += [f"- {f}" for f in pr["fix"]]
    return out


# Issue 29's targets for a wake: every server ready again within 3 s of it (p50 and max over
# the wakes), and no attempt spent on connections that died in the sleep.
WAKE_TARGET_S = 3


def wake_targets(wk, row):
    what = f"every server ready within {WAKE_TARGET_S:g} s of a wake"
    if "all_ready_p50_s" not in wk:
        why = f"skipped: {wk['skipped']}" if wk.get("skipped") else ""
        return [row(what + " (p50 and max)", None, why),
                row("no attempt spent over the wakes", None, "")]
    size = f"{wk['servers']} HTTP servers, {wk['wakes']} wakes"
    events = (f"; by the events' clocks {wk['all_ready_by_events_p50_s']:g} s"
              if wk.get("all_ready_by_events_p50_s") is not None else "")
    events_max = (f"; by the events' clocks {wk['all_ready_by_events_max_s']:g} s"
                  if wk.get("all_ready_by_events_max_s") is not None else "")
    generations = (f"{wk['generations_min']}" if wk["generations_min"] == wk["generations_max"]
                   else f"{wk['generations_min']}–{wk['generations_max']}")
    return [row(f"{what}, p50 ({size})", wk["all_ready_p50_s"] <= WAKE_TARGET_S,
                f"{wk['all_ready_p50_s']:g} s (the first server {wk['first_ready_p50_s']:g} s)"
                + events),
            row("... and the slowest of the wakes (max)", wk["all_ready_max_s"] <= WAKE_TARGET_S,
                f"{wk['all_ready_max_s']:g} s" + events_max),
            row("no attempt spent over the wakes", wk["attempts_spent"] == 0,
                f"{wk['attempts_spent']} spent; {generations} generation(s) per server a wake; "
                f"{wk['quarantined']} quarantined")]


def wake_section(wk):
    if "all_ready_p50_s" not in wk:
        return (["", "## Wake", "", f"Not measured: {wk['skipped']}."] if wk.get("skipped")
                else [])
    generations = (f"{wk['generations_min']}" if wk["generations_min"] == wk["generations_max"]
                   else f"{wk['generations_min']}–{wk['generations_max']}")
    by_events = (f"{wk['all_ready_by_events_p50_s']:g} / {wk['all_ready_by_events_max_s']:g}"
                 if wk.get("all_ready_by_events_p50_s") is not None else "—")
    out = ["", "## Wake", "",
           f"{wk['servers']} `lifeline-fixture http` servers ({wk['fixture_build']}) under "
           f"`lifeline watch --json` ({wk.get('build', 'release')} CLI), and stand-ins for "
           "logind and NetworkManager (`lifeline-system-bus`) on a private system bus that "
           "Lifeline is pointed at "
           f"(`DBUS_SYSTEM_BUS_ADDRESS`); {wk['wakes']} sleeps and wakes (`PrepareForSleep`). "
           "No machine sleeps: while it is \"asleep\" every fixture is killed and started again "
           "on its port, so every connection and session is gone. A wake's time runs from the "
           "harness reading the stand-ins' `ok wake` to its reading the last server's `ready` "
           "on a generation past the one it had before the sleep (a monotonic clock in the "
           "harness); the same by the events' own `at`, from the first `awake` event. "
           "Percentiles are nearest-rank over the wakes (bench/wake.py). Load average "
           f"{wk['loadavg_before'][0]} before the section, {wk['loadavg_after'][0]} after.", "",
           "| what | value |", "|---|---:|",
           f"| every server ready after a wake, p50 s | {wk['all_ready_p50_s']:g} |",
           f"| every server ready after a wake, max s | {wk['all_ready_max_s']:g} |",
           f"| the same by the events' clocks, p50 / max s | {by_events} |",
           f"| the first server ready, p50 s | {wk['first_ready_p50_s']:g} |",
           f"| attempts spent, all wakes | {wk['attempts_spent']} |",
           f"| generations per server per wake | {generations} |",
           f"| servers quarantined | {wk['quarantined']} |",
           f"| servers ready again before the wake was told | {wk['ready_before_wake']} |",
           "", "| wake | all ready s | first ready s | by the events' clocks s | generations "
           "| attempts spent |", "|---:|---:|---:|---:|---:|---:|"]
    for w in wk.get("per_wake") or []:
        g = (f"{w['generations_min']}" if w["generations_min"] == w["generations_max"]
             else f"{w['generations_min']}–{w['generations_max']}")
        ev = "—" if w["all_ready_by_events_s"] is None else f"{w['all_ready_by_events_s']:g}"
        out.append(f"| {w['wake']} | {w['all_ready_s']:g} | {w['first_ready_s']:g} | {ev} | {g} "
                   f"| {w['attempts_spent']} |")
    return out


def targets(result):
    """The issue's targets, each checked against this record: met, missed (and where), or
    not measured."""
    def row(what, ok, detail):
        verdict = "not measured" if ok is None else ("met" if ok else "**missed**")
        return f"| {what} | {verdict} | {detail} |"

    rows = []
    ratios = result.get("ratios") or []
    if ratios:
        slow = [r for r in ratios if r["p50_speedup"] < 1 or r["throughput_ratio"] < 1]
        detail = (f"{len(ratios) - len(slow)} of {len(ratios)} cells"
                  + ("; behind in " + ", ".join(
                      f"{r['server']} {r['transport']} c{r['concurrency']} "
                      f"(p50 {r['p50_speedup']}x, throughput {r['throughput_ratio']}x "
                      f"of {r['best_peer_p50']}/{r['best_peer_throughput']})" for r in slow)
                     if slow else ""))
        rows.append(row("p50 and throughput at least the best peer's, every transport and "
                        "concurrency", not slow, detail))
    else:
        rows.append(row("p50 and throughput at least the best peer's", None, ""))
    rows += gateway_targets(result.get("gateway") or {}, row)
    rows += serve_targets(result.get("serve") or {}, row)
    rows += search_targets(result.get("search") or {}, row)
    rows += pins_targets(result.get("search") or {}, row)
    rows += aggregate_targets(result.get("aggregate") or {}, row)
    rows += wake_targets(result.get("wake") or {}, row)
    faults = result.get("fault_matrix") or []
    ours = [f for f in faults if f["client"] == "lifeline"]
    hung = [f["scenario"] for f in ours if f["outcome"] == "hung"]
    rows.append(row("no hang anywhere in the fault matrix (Lifeline)", (not hung) if ours else None,
                    f"{len(ours)} scenarios" + (f"; hung: {', '.join(hung)}" if hung else "")))
    http = (result.get("scale") or {}).get("http") or {}
    if "idle_cpu_pct_of_one_core" in http:
        cpu, kb = http["idle_cpu_pct_of_one_core"], http["rss_per_connection_kb"]
        rows.append(row(f"{http['connections']} idle connections under 2 % of one core",
                        cpu < 2, f"{cpu} %"))
        rows.append(row("... and under 200 KB each", kb * 1.024 < 200,
                        f"{kb} KiB ({round(kb * 1.024, 1)} KB)"))
    restart = http.get("restart") or {}
    if "peak_share" in restart:
        share = restart["peak_share"]
        rows.append(row("no 100 ms window with more than 5 % of the reconnects", share <= 0.05,
                        f"{round(share * 100, 1)} % ({restart['peak_attempts_in_100ms']} of "
                        f"{restart['attempts_reaching_server']})"))
    ap = result.get("app") or {}
    if ap.get("binary_bytes"):
        sizes = {"lifeline-app": ap["binary_bytes"]}
        if ap.get("tray_binary_bytes"):
            sizes["lifeline-tray"] = ap["tray_binary_bytes"]
        rows.append(row("release app binaries under 15 MB each",
                        all(b < 15_000_000 for b in sizes.values()),
                        ", ".join(f"{name} {round(b / 1e6, 1)} MB" for name, b in sizes.items())))
    if "first_paint_ms" in ap:
        rows.append(row("first paint under 1 s", ap["first_paint_ms"] < 1000,
                        f"{ap['first_paint_ms']} ms"))
        rows.append(row(f"window open with {ap['servers']} servers: total RSS under the "
                        f"{OPEN_RSS_BEFORE_MB} MB of before", ap["idle_rss_kb"] * 1.024 / 1000
                        < OPEN_RSS_BEFORE_MB, f"{round(ap['idle_rss_kb'] * 1.024 / 1000)} MB"))
    if "tray_rss_kb" in ap:
        mb = ap["tray_rss_kb"] * 1.024 / 1000
        rows.append(row(f"closed to the tray with {ap['servers']} servers: total RSS under 60 MB, "
                        "no window or WebKit process", mb < 60 and ap["tray_webkit_processes"] == 0,
                        f"{round(mb, 1)} MB, {ap['tray_webkit_processes']} processes besides the core"))
    return ["## Against the targets", "",
            "The targets of the issues that asked for these benchmarks, checked against this "
            "record by bench/report.py.", "",
            "| target | verdict | measured |", "|---|---|---|", *rows, ""]


def write(result, md_path, charts_dir):
    records = result["call_path"]
    clients = [c for c in ["lifeline", "typescript", "python", "rust"]
               if any(r["client"] == c for r in records)]
    groups = list(dict.fromkeys(cell(r) for r in records))
    by = {(cell(r), r["client"]): r for r in records}
    charts_dir.mkdir(parents=True, exist_ok=True)
    charts = [("p50", "p50 round trip of tools/call (lower is better)", "µs", "p50_us"),
              ("throughput", "calls per second (higher is better)", "calls/s", "calls_per_s"),
              ("cpu", "client CPU per 10,000 calls (lower is better)", "ms", "cpu_ms_per_10k"),
              ("rss", "client peak RSS (lower is better)", "KiB", "peak_rss_kb")]
    for name, title, unit, key in charts:
        svg = bar_chart(title, unit, groups, clients,
                        lambda g, c, key=key: by[(g, c)][key] if (g, c) in by else None)
        (charts_dir / f"{name}.svg").write_text(svg)
    rel = charts_dir.name
    m, machine = result["method"], result["machine"]
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by bench/run.py (make bench) from benchmarks.json; edit bench/report.py, "
        "not this file. -->",
        "",
    ]
    if result.get("note"):
        lines += [f"> **{result['note']}**", ""]
    carried = result.get("carried_over") or []
    for c in [carried] if isinstance(carried, dict) else carried:
        which = ("Sections " + ", ".join(c["sections"]) + " are" if len(c["sections"]) > 1
                 else f"Section {c['sections'][0]} is")
        lines += [f"{which} from the run of {c['from']} "
                  f"(load average then {c['machine']['loadavg'][0]})."]
    if carried:
        lines += ["The rest are from the run below.", ""]
    if result.get("remeasured"):
        r = result["remeasured"]
        app_at = (f"; the app on {r['app_at']} (load average {r['app_loadavg'][0]})"
                  if r.get("app_at") else "")
        lines += [f"> Sections {', '.join(r['sections'])} were measured again on "
                  f"{r['at']} (load average {r['loadavg'][0]}{app_at}; a LOADED machine: two "
                  f"other engineers were compiling), {r['why']}. The other sections are from "
                  "the run below, before those changes.", ""]
    if result.get("smoke"):
        lines += ["> **Smoke run**: a handful of calls per client to keep the harness working. "
                  "These numbers mean nothing.", ""]
    lines += [
        f"Run {result['generated_at']} on {machine['cpus']} CPU(s) ({machine['cpu_model'] or 'unknown model'}), "
        f"Linux {machine['kernel']}; load average {machine['loadavg_before'][0]} before and "
        f"{machine['loadavg'][0]} after the run. {m['runs']} run(s) of {m['calls']} calls "
        f"(after {m['warmup']} unmeasured) per client and cell, clients {m['order']}; "
        f"each figure is the median of the runs. Fixture built in {m['fixture_build']}.",
        "",
        *targets(result),
        "## Call path",
        "",
        "A small `tools/call` (`echo`) against the same server, over stdio and Streamable HTTP, "
        "by each client's own driver (bench/README.md). p50/p99 are per-call round trips "
        "measured inside the client; CPU is the client process's user+system time "
        "(getrusage, its children excluded) per 10,000 calls; RSS is its peak.",
        "",
        f"![p50]({rel}/p50.svg)",
        "",
        f"![throughput]({rel}/throughput.svg)",
        "",
        f"![cpu]({rel}/cpu.svg)",
        "",
        f"![rss]({rel}/rss.svg)",
        "",
        "| server | transport | conc. | client | p50 µs | p99 µs | calls/s | CPU ms/10k | peak RSS KiB |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        lines.append(f'| {r["server"]} | {r["transport"]} | {r["concurrency"]} | {r["client"]} | '
                     f'{r["p50_us"]} | {r["p99_us"]} | {r["calls_per_s"]} | {r["cpu_ms_per_10k"]} | '
                     f'{r["peak_rss_kb"]} |')
    lines += ["", "### Lifeline against the best peer", "",
              "p50 speed-up = best peer's p50 / Lifeline's p50; throughput ratio = Lifeline's "
              "calls/s / best peer's. Above 1 means Lifeline is ahead.", "",
              "| server | transport | conc. | best p50 peer | p50 speed-up | best throughput peer | throughput ratio |",
              "|---|---|---:|---|---:|---|---:|"]
    for q in result["ratios"]:
        lines.append(f'| {q["server"]} | {q["transport"]} | {q["concurrency"]} | {q["best_peer_p50"]} | '
                     f'{q["p50_speedup"]} | {q["best_peer_throughput"]} | {q["throughput_ratio"]} |')
    lines += gateway_section(result.get("gateway") or {})
    lines += serve_section(result.get("serve") or {})
    faults = result.get("fault_matrix") or []
    if faults:
        lines += ["", "## Fault matrix", "",
                  f"One connection and one `echo` call per client against a fixture scripted with "
                  f"the fault (bench/run.py `FAULTS`). `recovered`: the call succeeded; `error`: "
                  f"it ended in an error (the text is in benchmarks.json); `hung`: nothing within "
                  f"{m['hang_bound_s']} s. Seconds are from the start of the step that met the "
                  f"fault (the call, or the connection for a stalled initialize).", ""]
        fclients = list(dict.fromkeys(f["client"] for f in faults))
        lines += ["| scenario | " + " | ".join(fclients) + " |",
                  "|---|" + "---|" * len(fclients)]
        for scenario in dict.fromkeys(f["scenario"] for f in faults):
            row = {f["client"]: f for f in faults if f["scenario"] == scenario}
            cells = [f'{row[c]["outcome"]} {row[c]["seconds"]} s' if c in row else "" for c in fclients]
            lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    sc = result.get("scale") or {}
    if sc.get("http") or sc.get("stdio"):
        lines += ["", "## Scale", "",
                  "One lifeline-core process (`bench-scale`) holding many supervisors, as the app "
                  "does. Idle CPU is the process's CPU time over an idle window of "
                  f"{sc['idle_seconds']} s, as % of one core (health pings included); RSS per "
                  "connection is the growth of the process's RSS divided by the connections. "
                  "For the restart, the HTTP fixture (every connection holding its GET stream) "
                  "is killed and started again on the same port; attempts are the `initialize` "
                  "requests that reached the new server (its log).", "",
                  "| what | value |", "|---|---:|"]
        h, st = sc.get("http") or {}, sc.get("stdio") or {}
        if h:
            r = h["restart"]
            lines += [
                f'| HTTP connections (all ready: {h["all_ready"]}) | {h["connections"]} |',
                f'| HTTP: idle CPU, % of one core | {h["idle_cpu_pct_of_one_core"]} |',
                f'| HTTP: RSS per connection, KiB | {round(h["rss_per_connection_kb"], 1)} |',
                f'| restart: seconds until all ready (all: {r["all_ready_again"]}) | {r["seconds_until_all_ready"]} |',
                f'| restart: attempts reaching the server | {r["attempts_reaching_server"]} |',
                f'| restart: most attempts in any 100 ms | {r["peak_attempts_in_100ms"]} ({round(r["peak_share"] * 100, 1)} %) |',
                f'| restart: events into a subscriber, per s | {r["events_per_s"]} ({r["events"]} events) |',
            ]
        if st:
            lines += [
                f'| stdio servers (all ready: {st["all_ready"]}) | {st["servers"]} |',
                f'| stdio: idle CPU, % of one core | {st["idle_cpu_pct_of_one_core"]} |',
                f'| stdio: RSS per connection, KiB (client only) | {round(st["rss_per_connection_kb"], 1)} |',
            ]
        if sc.get("note"):
            lines += ["", sc["note"]]
    ap = result.get("app") or {}
    if ap.get("binary_bytes"):
        mib = lambda b: f"{b / 1048576:.1f} MiB" if b else "—"
        lines += ["", "## The app", "",
                  "The desktop app as `make bench-build` builds it (the UI, then `cargo build "
                  "--release -p lifeline-app -p lifeline-desktop`, the UI embedded), started "
                  "under Xvfb with a private D-Bus session bus and a tray on it (lifeline-tray-host) "
                  f"with {ap['servers']} stdio fixture servers configured; medians of "
                  f"{ap.get('runs', 1)} start(s). First paint: from spawning the process to the "
                  "UI's report that its first frame is on screen (`ui_painted`, logged by the "
                  "app). Idle memory: the core process, the window process and its WebKit "
                  f"processes (not the fixture servers), {ap['idle_seconds']} s after every "
                  "server was ready; then the "
                  "window is closed (WM_DELETE_WINDOW, as its close button sends) and, "
                  f"{ap['idle_seconds']} s later, the same processes again.", "",
                  "| what | value |", "|---|---:|",
                  f'| release binary: `lifeline-app` (the window) | {mib(ap["binary_bytes"])} |',
                  f'| release binary, stripped | {mib(ap.get("binary_stripped_bytes"))} |']
        if ap.get("tray_binary_bytes"):
            lines += [f'| release binary: `lifeline-tray` (the core, in the tray) | '
                      f'{mib(ap["tray_binary_bytes"])} |']
        if "first_paint_ms" in ap:
            lines += [
                f'| cold start to first paint, ms (the app\'s own count from the core\'s start) | '
                f'{ap["first_paint_ms"]} ({ap["first_paint_app_ms"]}) |',
                f'| start to all {ap["servers"]} servers ready, s | {ap["all_ready_s"]} |',
                f'| idle RSS, core + {ap["webkit_processes"]} window and WebKit processes | {mib(ap["idle_rss_kb"] * 1024)} |',
                f'| idle PSS (shared pages split), same processes | {mib(ap["idle_pss_kb"] * 1024)} |',
                f'| idle RSS, the core process alone | {mib(ap["app_process_rss_kb"] * 1024)} |',
            ]
        if "tray_rss_kb" in ap:
            lines += [
                f'| closed to the tray: RSS, core + {ap["tray_webkit_processes"]} other processes '
                f'| {mib(ap["tray_rss_kb"] * 1024)} |',
                f'| closed to the tray: PSS | {mib(ap["tray_pss_kb"] * 1024)} |',
            ]
        if ap.get("error"):
            lines += ["", f"The app's start was not measured: {ap['error']}."]
    lines += search_section(result.get("search") or {})
    lines += pins_section(result.get("search") or {})
    if result.get("aggregate"):
        lines += aggregate_section(result["aggregate"])
        lines += aggregate_profile(result.get("aggregate_profile"))
    lines += wake_section(result.get("wake") or {})
    lines += what_dominates(result.get("profile"))
    if result["failures"]:
        lines += ["", "### Failed runs", ""]
        lines += [f'- {f["cell"]}: {f["error"]}' for f in result["failures"]]
    method = Path(__file__).with_name("METHOD.md")
    if method.exists():
        lines += ["", method.read_text().rstrip()]
    md_path.write_text("\n".join(lines) + "\n")
