// Earlier runs, from the shell's history (docs/history.md): shown, never applied. Nothing here
// reaches `applyEvent` or the store's `seq` bookkeeping: an earlier run's events carry that
// run's `seq` and states that are long over, so replaying them would regress a live server or
// look like a gap. The feed shows them under a divider per run; the detail panel shows a
// server's earlier failures and calls.

import { type Host, toCommandError } from "../host/index";
import type { Event, PastCall, PastEvent, PastFailure } from "../host/types";
import { type ActivityItem, activityItem, pushActivity } from "./activity";

/** Earlier events read for the feed; the feed shows the newest of them. */
export const PAST_EVENTS = 200;
/** A server's earlier failures and calls, each. */
export const PAST_PER_SERVER = 50;

/** A feed line of an earlier run; `id` is the history row's (its `seq` was that run's). */
export type PastItem = ActivityItem & { id: number };

/** One earlier run in the feed: when it started and its lines, newest first. */
export interface PastRun {
  run: number;
  startedAt: string;
  items: PastItem[];
}

/** A server's earlier failures and calls, newest first. */
export interface ServerPast {
  failures: PastFailure[];
  calls: PastCall[];
}

/**
 * Groups history rows (newest first, as the shell returns them) into runs, newest first, with
 * the feed's lines. Lines are made oldest first per run, so an attempt's stage-by-stage
 * progress is left out as in the live feed.
 */
export function pastRuns(rows: PastEvent[]): PastRun[] {
  const byRun = new Map<number, PastEvent[]>();
  for (const row of rows) {
    const list = byRun.get(row.run) ?? [];
    list.push(row);
    byRun.set(row.run, list);
  }
  const runs: PastRun[] = [];
  for (const [run, list] of byRun) {
    const last = new Map<string, Event>();
    // Newest first; a host's calls in a row share a line, as in the live feed.
    let items: PastItem[] = [];
    for (const row of [...list].sort((a, b) => a.id - b.id)) {
      const e = row.event;
      const item = activityItem(e, last.get(e.server));
      if (e.type === "state" || e.type === "failure") last.set(e.server, e);
      if (item) items = pushActivity(items, { ...item, id: row.id }, Infinity);
    }
    runs.push({ run, startedAt: list[0]!.run_started_at, items });
  }
  return runs.sort((a, b) => b.run - a.run).filter((r) => r.items.length > 0);
}

export class HistoryStore {
  /** Earlier runs for the feed, newest first; empty until loaded, and on a first start. */
  runs: PastRun[] = $state.raw([]);
  /** By server, once its detail was opened. */
  servers: Record<string, ServerPast> = $state({});
  /** Why the history could not be read (the feed says so, quietly). */
  error: string | null = $state(null);

  readonly #host: Host;
  #loading = new Set<string>();

  constructor(host: Host) {
    this.#host = host;
  }

  /** Reads the recent events of earlier runs for the feed. */
  async load(): Promise<void> {
    try {
      this.runs = pastRuns(await this.#host.historyEvents({ limit: PAST_EVENTS }));
    } catch (e) {
      this.error = toCommandError(e).message;
    }
  }

  /** Reads `server`'s earlier failures and calls, once. */
  async loadServer(server: string): Promise<void> {
    if (this.servers[server] || this.#loading.has(server)) return;
    this.#loading.add(server);
    try {
      const query = { server, limit: PAST_PER_SERVER };
      const [failures, calls] = await Promise.all([
        this.#host.historyFailures(query),
        this.#host.historyCalls(query),
      ]);
      this.servers[server] = { failures, calls };
    } catch (e) {
      this.error = toCommandError(e).message;
    } finally {
      this.#loading.delete(server);
    }
  }
}

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** When a run started, in local time: "Sat 28 Nov, 17:05". */
export function runStartText(at: string): string {
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return at;
  const hm = `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
  return `${DAYS[d.getDay()]} ${d.getDate()} ${MONTHS[d.getMonth()]}, ${hm}`;
}
