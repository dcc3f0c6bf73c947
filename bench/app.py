"""The benchmark's app section (bench/METHOD.md, "The app"): the release desktop app under
Xvfb with N stdio fixture servers: binary size, cold start to first paint, idle memory with
the window open and closed to the tray. Called by run.py (`--only app`).
"""

import json
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path

import xclose


def start_xvfb():
    """An Xvfb server on a free display (it writes the number it took to -displayfd)."""
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24",
                             "-nolisten", "tcp"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        display = f.readline().strip()
    if not display:
        proc.kill()
        raise RuntimeError("Xvfb did not start")
    return proc, f":{display}"


def start_session_bus():
    """A private D-Bus session bus, as a desktop session has: the tray process puts its
    StatusNotifierItem there (with no bus there is no tray, and closing the window quits)."""
    proc = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = proc.stdout.readline().strip()
    if not address:
        proc.kill()
        raise RuntimeError("dbus-daemon did not say its address")
    return proc, address


def start_tray_host(tools, bus):
    """A panel's tray on `bus`: lifeline-tray-host, a StatusNotifierWatcher (lifeline-it).
    With it the app has a tray to live in, as on a desktop; without one, closing quits."""
    host = Path(tools.app).with_name("lifeline-tray-host")
    proc = subprocess.Popen([str(host)], env={**os.environ, "DBUS_SESSION_BUS_ADDRESS": bus},
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if proc.stdout.readline().strip() != "READY":
        proc.kill()
        raise RuntimeError(f"{host} did not start")
    return proc


def descendants(pid):
    """Every process below `pid` (children, their children...), from /proc."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], list(children.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def memory_kb(pid):
    """(RSS, PSS) of one process in KiB; PSS shares each page among the processes mapping it."""
    rss = pss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def web_processes(pid):
    """The core process's descendants that are not the fixture servers it supervises: the
    window process (`lifeline-app --window`) and its WebKit processes."""
    out = []
    for p in descendants(pid):
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "lifeline-fixture" not in cmd:
            out.append(p)
    return out


def app_once(tools, scratch, n_servers, idle, display, bus, bound=120):
    """One cold start of the release app under Xvfb with `n_servers` stdio fixture servers:
    spawn -> the `first paint` log line (the UI reports its first frame, `ui_painted`), then
    every server ready, `idle` seconds, and the RSS/PSS of the app: the core process, the
    window process and its WebKit processes (the fixture servers it spawned are not
    counted); then the window is closed to the tray, and after `idle` seconds more the same
    again (tray-resident: the core process alone, plus whatever else is left below it)."""
    work = scratch / f"app-{time.time_ns()}"
    state = work / "state"
    state.mkdir(parents=True)
    servers = {f"s{i:02}": {"command": tools.fixture, "args": ["stdio"]} for i in range(n_servers)}
    config = work / "config.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    env = {**os.environ, "DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": bus,
           "XDG_STATE_HOME": str(state),
           "LIFELINE_HISTORY": str(state / "history.db"), "LIFELINE_LOG": "info",
           "LIFELINE_CONFIG": str(config)}
    env.pop("WAYLAND_DISPLAY", None)
    lines, seen = [], threading.Event()
    spawned = time.monotonic()
    proc = subprocess.Popen([tools.app], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)

    def drain():
        for line in proc.stderr:
            lines.append((time.monotonic() - spawned, line))
            seen.set()

    threading.Thread(target=drain, daemon=True).start()

    def wait_for(pred):
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline and proc.poll() is None:
            hit = next((x for x in lines if pred(x[1])), None)
            if hit:
                return hit
            seen.wait(0.05)
            seen.clear()
        return None

    try:
        paint = wait_for(lambda l: "first paint " in l)
        if not paint:
            # What the app said instead, so that a failure in CI can be read from the record.
            said = [line.rstrip() for _, line in lines[-20:]]
            return {"error": "no `first paint` line in the app's log within "
                             f"{bound} s (is the app built with the UI that reports it?)",
                    "exit": proc.poll(), "last_lines": said}
        app_ms = int(paint[1].split("first paint ", 1)[1].split()[0])
        pending = {f"{name} #1 ready" for name in servers}

        def last_ready(line):
            pending.difference_update({m for m in pending if m in line})
            return not pending

        ready = wait_for(last_ready)
        if not ready:
            return {"error": f"not all {n_servers} servers ready within {bound} s"}
        time.sleep(idle)
        webkit = web_processes(proc.pid)
        app_rss, app_pss = memory_kb(proc.pid)
        mem = [memory_kb(p) for p in webkit]
        record = {
            "first_paint_ms": round(paint[0] * 1000),
            "first_paint_app_ms": app_ms,
            "all_ready_s": round(ready[0], 3),
            "idle_rss_kb": app_rss + sum(r for r, _ in mem),
            "idle_pss_kb": app_pss + sum(p for _, p in mem),
            "app_process_rss_kb": app_rss,
            "webkit_processes": len(webkit),
        }
        # Closed to the tray, the way a user closes it: the window process ends, and its
        # WebKit processes with it; what stays is the core process (the fleet, the tray).
        if not xclose.close(display, "Lifeline"):
            return {"error": "no window titled Lifeline to close"}
        if not wait_for(lambda l: "supervising from the tray" in l):
            return {"error": "closing the window did not keep the app in the tray"}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and web_processes(proc.pid):
            time.sleep(0.1)
        time.sleep(idle)
        tray_rss, tray_pss = memory_kb(proc.pid)
        left = web_processes(proc.pid)
        record.update({
            "tray_rss_kb": tray_rss + sum(memory_kb(p)[0] for p in left),
            "tray_pss_kb": tray_pss + sum(memory_kb(p)[1] for p in left),
            "tray_webkit_processes": len(left),
        })
        return record
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def app(tools, args, scratch, log):
    """The desktop app (issue 6): release binary size, cold start to first paint, idle RSS
    with 20 servers (bench/METHOD.md)."""
    if not tools.app:
        return {"error": "target/release/lifeline-app not built (make bench-build builds it)"}
    n_servers, idle, runs = (3, 1, 1) if args.smoke else (20, 10, 3)
    binary = Path(tools.app)
    # The window's executable, and on Linux the tray-resident core's beside it.
    tray = binary.with_name("lifeline-tray")
    stripped = scratch / "lifeline-app.stripped"
    subprocess.run(["strip", "-o", str(stripped), str(binary)], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = {"servers": n_servers, "idle_seconds": idle, "runs": runs,
              "binary_bytes": binary.stat().st_size,
              "binary_stripped_bytes": stripped.stat().st_size if stripped.exists() else None,
              "tray_binary_bytes": tray.stat().st_size if tray.exists() else None}
    try:
        xvfb, display = start_xvfb()
    except (OSError, RuntimeError) as e:
        return {**record, "error": f"cannot start Xvfb: {e}"}
    try:
        bus_proc, bus = start_session_bus()
    except (OSError, RuntimeError) as e:
        xvfb.terminate()
        xvfb.wait()
        return {**record, "error": f"cannot start a D-Bus session bus (dbus-daemon): {e}"}
    try:
        tray_host = start_tray_host(tools, bus)
    except (OSError, RuntimeError) as e:
        for proc in (bus_proc, xvfb):
            proc.terminate()
            proc.wait()
        return {**record, "error": f"cannot start the tray host (make bench-build builds it): {e}"}
    samples = []
    try:
        for i in range(runs):
            sample = app_once(tools, scratch, n_servers, idle, display, bus)
            log(f"  app run {i + 1}: {json.dumps(sample)}")
            if "error" in sample:
                return {**record, "error": sample["error"]}
            samples.append(sample)
    finally:
        tray_host.terminate()
        tray_host.wait()
        bus_proc.terminate()
        bus_proc.wait()
        xvfb.terminate()
        xvfb.wait()
    for key in samples[0]:
        record[key] = statistics.median(s[key] for s in samples)
    return record
