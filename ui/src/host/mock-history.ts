// The mock host's history of earlier runs (`?mock&history`): two app runs before this one, a
// day and two days before the host was made, with the rows the shell's `history_*` commands
// would return for them. Ids grow with time across runs, as in the SQLite file.
//
//   run 6 (two days ago)  filesystem connects
//   run 7 (yesterday)     sqlite exits with code 1 once and comes back; github is rate limited
//                         once; a few tool calls (ok, tool_error, a timeout); then the app quits

import { NO_STATE, failureOf, iso } from "./mock-wire";
import type {
  CommandError,
  Event,
  Failure,
  HistoryQuery,
  PastCall,
  PastEvent,
  PastFailure,
  StateInfo,
  StateName,
} from "./types";

const S = 1000;
const HOUR = 3600 * S;

export interface MockHistory {
  events: PastEvent[];
  failures: PastFailure[];
  calls: PastCall[];
}

/** Builds one run's rows from a script of (ms after the run started, server, generation, body). */
class RunWriter {
  private seq = 0;
  constructor(
    private readonly into: MockHistory,
    private readonly ids: { next: number },
    readonly run: number,
    readonly startedAt: number,
  ) {}

  private head() {
    return { id: this.ids.next++, run: this.run, run_started_at: iso(this.startedAt) };
  }

  private event(ms: number, server: string, generation: number, body: object): Event {
    this.seq += 1;
    const e = { v: 1, seq: this.seq, at: iso(this.startedAt + ms), server, generation, ...body };
    this.into.events.push({ ...this.head(), event: e as Event });
    return e as Event;
  }

  state(ms: number, server: string, generation: number, state: StateName, extra: Partial<StateInfo> = {}): void {
    this.event(ms, server, generation, { type: "state", ...NO_STATE, state, ...extra });
  }

  failure(ms: number, server: string, failure: Failure): void {
    const e = this.event(ms, server, failure.generation, { type: "failure", failure });
    this.into.failures.push({ ...this.head(), at: e.at, server, failure });
  }

  call(ms: number, server: string, tool: string, duration_ms: number, outcome: PastCall["outcome"], error_kind: string | null = null): void {
    const started_at = iso(this.startedAt + ms);
    this.into.calls.push({ ...this.head(), server, tool, started_at, duration_ms, outcome, error_kind });
  }
}

/** The rows of two earlier runs, relative to `t0` (when the host was made). */
export function mockHistory(t0: number): MockHistory {
  const h: MockHistory = { events: [], failures: [], calls: [] };
  const ids = { next: 1 };

  const older = new RunWriter(h, ids, 6, t0 - 48 * HOUR);
  older.state(10, "filesystem", 1, "connecting", { stage: "spawn", attempt: 1, max_attempts: 10 });
  older.state(240, "filesystem", 1, "ready");
  older.state(2 * HOUR, "filesystem", 1, "stopping");

  const last = new RunWriter(h, ids, 7, t0 - 24 * HOUR);
  for (const server of ["filesystem", "github", "sqlite"]) {
    last.state(10, server, 1, "connecting", { stage: "spawn", attempt: 1, max_attempts: 10 });
  }
  last.state(220, "filesystem", 1, "ready");
  last.state(300, "sqlite", 1, "ready");
  const limited = failureOf("rate_limited", "HTTP 429 Too Many Requests; retry after 20 s", 1, {
    status: 429,
    reason: "Too Many Requests",
    retry_after_ms: 20 * S,
    method: "POST",
    url_path: "/mcp",
  });
  last.failure(400, "github", limited);
  last.state(401, "github", 1, "retrying", { attempt: 1, max_attempts: 10, delay_ms: 20 * S, cause: limited });
  last.state(20_500, "github", 2, "connecting", { stage: "connect", attempt: 2, max_attempts: 10 });
  last.state(20_900, "github", 2, "ready");
  last.call(60 * S, "filesystem", "read_file", 12, "ok");
  last.call(90 * S, "github", "search_issues", 340, "tool_error");
  last.call(5 * 60 * S, "sqlite", "query", 60_000, "error", "timeout");
  const exited = failureOf("process_exit", "the server process exited with exit code 1", 1, {
    phase: "call",
    exit_code: 1,
    attempt: null,
  });
  last.failure(6 * 60 * S, "sqlite", exited);
  last.state(6 * 60 * S + 1, "sqlite", 1, "reconnecting", { attempt: 1, max_attempts: 10, delay_ms: 500, cause: exited });
  last.state(6 * 60 * S + 510, "sqlite", 2, "connecting", { stage: "spawn", attempt: 1, max_attempts: 10 });
  last.state(6 * 60 * S + 800, "sqlite", 2, "ready");
  last.call(7 * 60 * S, "sqlite", "query", 48, "ok");
  for (const server of ["filesystem", "github", "sqlite"]) {
    last.state(HOUR, server, server === "filesystem" ? 1 : 2, "stopping");
  }
  return h;
}

/** `rows` filtered and paged as the shell's SQL does: by server, below `before`, newest first. */
export function queryRows<T extends { id: number; server?: string; event?: Event }>(rows: T[], q: HistoryQuery): T[] {
  if (!Number.isInteger(q.limit) || q.limit < 1 || q.limit > 1000) {
    throw { kind: "bad_query", message: `limit must be between 1 and 1000, got ${q.limit}` } satisfies CommandError;
  }
  return rows
    .filter((r) => q.server === undefined || (r.server ?? r.event?.server) === q.server)
    .filter((r) => q.before === undefined || r.id < q.before)
    .sort((a, b) => b.id - a.id)
    .slice(0, q.limit)
    .map((r) => structuredClone(r));
}
