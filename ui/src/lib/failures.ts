// The failure history as people read it: repeats collapsed into one line ("HTTP 429 Too Many
// Requests ×14 over 6 min", as Kubernetes events do), and exit codes and signals glossed.

import type { Failure } from "../host/types";
import { formatSpan } from "./format";
import type { FailureEntry } from "./model";

const SIGNALS: Record<number, [string, string]> = {
  1: ["SIGHUP", "hung up"],
  2: ["SIGINT", "interrupted"],
  3: ["SIGQUIT", "quit"],
  4: ["SIGILL", "illegal instruction"],
  6: ["SIGABRT", "aborted"],
  7: ["SIGBUS", "bus error"],
  8: ["SIGFPE", "arithmetic error"],
  9: ["SIGKILL", "killed"],
  11: ["SIGSEGV", "segmentation fault"],
  13: ["SIGPIPE", "broken pipe"],
  15: ["SIGTERM", "terminated"],
};

export function signalName(signal: number): string {
  return SIGNALS[signal]?.[0] ?? `signal ${signal}`;
}

/**
 * What an exit code or signal usually means: 127 command not found, 126 not executable,
 * 137/SIGKILL killed, 143/SIGTERM terminated, 139/SIGSEGV segmentation fault. Null when
 * there is nothing useful to say (exit code 1 means whatever the program meant).
 */
export function exitGloss(exitCode: number | null, signal: number | null): string | null {
  if (signal !== null) {
    const s = SIGNALS[signal];
    if (!s) return null;
    return signal === 9 ? "killed (often: out of memory)" : s[1];
  }
  switch (exitCode) {
    case null:
      return null;
    case 0:
      return "exited cleanly, but a server should keep running";
    case 126:
      return "not executable (permission denied)";
    case 127:
      return "command not found";
    case 137:
      return "killed by SIGKILL (often: out of memory)";
    case 139:
      return "segmentation fault (SIGSEGV)";
    case 143:
      return "terminated by SIGTERM";
    default:
      // 128+n is how shells report death by signal n.
      if (exitCode > 128 && SIGNALS[exitCode - 128]) {
        const [name, what] = SIGNALS[exitCode - 128]!;
        return `${what} (${name})`;
      }
      return null;
  }
}

/** "exit code 127" / "signal 9 (SIGKILL)" */
export function exitText(exitCode: number | null, signal: number | null): string | null {
  if (signal !== null) return `signal ${signal} (${signalName(signal)})`;
  if (exitCode !== null) return `exit code ${exitCode}`;
  return null;
}

const KIND_LABEL: Record<string, string> = {
  auth: "unauthorized",
  permission: "forbidden",
  rate_limited: "rate limited",
  server: "server error",
  protocol: "protocol error",
  timeout: "timed out",
  transport: "connection failed",
  session_expired: "session expired",
  stream_lost: "stream lost",
  process_exit: "process exited",
  spawn: "could not start",
  config: "config error",
  cancelled: "cancelled",
};

/** A short name for a failure: the HTTP status, the exit, or the kind. */
export function failureLabel(f: Failure): string {
  if (f.status !== null) return `HTTP ${f.status}${f.reason ? ` ${f.reason}` : ""}`;
  if (f.signal !== null) return `killed by ${signalName(f.signal)}`;
  if (f.exit_code !== null) return `exited with code ${f.exit_code}`;
  return KIND_LABEL[f.kind] ?? f.kind.replaceAll("_", " ");
}

/**
 * Failures that are "the same" for the history: same kind, phase, stage, status, exit and
 * message up to its numbers (ports, pids and counts vary between attempts of one fault).
 */
export function failureKey(f: Failure): string {
  return [
    f.kind,
    f.phase,
    f.stage,
    f.status,
    f.exit_code,
    f.signal,
    f.message.replace(/\d+/g, "#"),
  ].join("|");
}

export interface FailureGroup {
  key: string;
  label: string;
  count: number;
  first: FailureEntry;
  last: FailureEntry;
  /** Oldest first. */
  entries: FailureEntry[];
}

/** Runs of the same failure, newest run first (a run is broken by any different failure). */
export function groupFailures(entries: readonly FailureEntry[]): FailureGroup[] {
  const groups: FailureGroup[] = [];
  for (const entry of entries) {
    const key = failureKey(entry.failure);
    const g = groups[groups.length - 1];
    if (g && g.key === key) {
      g.count += 1;
      g.last = entry;
      g.entries.push(entry);
    } else {
      groups.push({
        key,
        label: failureLabel(entry.failure),
        count: 1,
        first: entry,
        last: entry,
        entries: [entry],
      });
    }
  }
  return groups.reverse();
}

/** "exited with code 1 ×12 over 3 min"; a single failure is just its label. */
export function groupSummary(g: FailureGroup): string {
  if (g.count === 1) return g.label;
  const span = Date.parse(g.last.at) - Date.parse(g.first.at);
  return `${g.label} ×${g.count} over ${formatSpan(span)}`;
}
