// The mock's Hosts section, derived from the events it has played (the recording's
// `host_attached`, `host_detached` and `host_call`, recorded from a real gateway session by
// tests/tests/it/recording.rs), the way the app builds it: the core's `Hosts` keeps who is
// attached from the same moments, and its per-tool statistics (crates/core/src/gateway/stats.rs)
// are what the app rebuilds from the history's `host_call` events at start. This ports their
// rules: the window is the current minute and the 59 before it, a tool's percentiles are the
// nearest rank over its latest MAX_SAMPLES calls in the window, the most called tool first.
// Calls in flight are not in any event, and the recorded calls have all ended: `live_calls` is 0.

import type { AttachedHost, Event, HostsView, ToolStats } from "./types";

const MINUTE_MS = 60_000;
const WINDOW_MINUTES = 60;
const MAX_SAMPLES = 256;

/** The nearest-rank percentile `p` of `sorted` (ascending), as stats.rs computes it. */
export function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(Math.max(Math.ceil((p * sorted.length) / 100), 1), sorted.length);
  return sorted[rank - 1]!;
}

/** `server`'s Hosts section from the events played so far, as of `now` (epoch ms). */
export function hostsView(events: readonly Event[], server: string, now: number): HostsView {
  const attached = new Map<number, AttachedHost>();
  const calls = new Map<string, { ok: boolean; ms: number }[]>();
  const nowMinute = Math.floor(now / MINUTE_MS);
  for (const e of events) {
    if (e.server !== server) continue;
    if (e.type === "host_attached") {
      attached.set(e.host.id, { ...e.host, attached_at: e.at, live_calls: 0 });
    } else if (e.type === "host_detached") {
      attached.delete(e.host.id);
    } else if (e.type === "host_call") {
      const minute = Math.floor(Date.parse(e.at) / MINUTE_MS);
      if (minute > nowMinute || nowMinute - minute >= WINDOW_MINUTES) continue;
      const list = calls.get(e.tool) ?? [];
      list.push({ ok: e.outcome === "ok", ms: e.duration_ms });
      calls.set(e.tool, list);
    }
  }
  const tools: ToolStats[] = [...calls].map(([tool, list]) => {
    const ms = list
      .slice(-MAX_SAMPLES)
      .map((c) => c.ms)
      .sort((a, b) => a - b);
    return {
      tool,
      calls: list.length,
      errors: list.filter((c) => !c.ok).length,
      p50_ms: percentile(ms, 50),
      p95_ms: percentile(ms, 95),
    };
  });
  tools.sort((a, b) => b.calls - a.calls || (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
  const hosts = [...attached.values()];
  return { hosts, live_calls: 0, tools };
}
