// The failure history as people read it: repeats collapsed into one line ("HTTP 429 Too Many
// Requests ×14 over 6 min", as Kubernetes events do), and exit codes and signals glossed.

import {
  EXIT_CODE_GLOSSES,
  KIND_LABELS,
  SIGNAL_GLOSSES,
  SIGNAL_NAMES,
  WINDOWS_EXIT_CODE_GLOSSES,
} from "../host/generated";
import type { Failure } from "../host/types";
import { formatSpan } from "./format";
import type { FailureEntry } from "./model";

export function signalName(signal: number): string {
  return SIGNAL_NAMES[signal] ?? `signal ${signal}`;
}

/**
 * Whose exit codes these are: the servers run on the machine the UI runs on, and on Windows
 * a code means something else (no signals; a crash ends a process with an NTSTATUS code
 * such as 0xC0000005, and 137 is just 137). WebView2's user agent says "Windows".
 */
export type ExitPlatform = "unix" | "windows";
export const PLATFORM: ExitPlatform =
  typeof navigator !== "undefined" && /Windows/.test(navigator.userAgent) ? "windows" : "unix";

/**
 * What an exit code or signal usually means: 127 command not found, 126 not executable,
 * 137/SIGKILL killed, 143/SIGTERM terminated, 139/SIGSEGV segmentation fault; on Windows
 * 0xC0000005 access violation, 9009 command not found. Null when there is nothing useful
 * to say (exit code 1 means whatever the program meant). The words are the core's
 * (lifeline_core::gloss), generated into ../host/generated.ts.
 */
export function exitGloss(
  exitCode: number | null,
  signal: number | null,
  platform: ExitPlatform = PLATFORM,
): string | null {
  if (platform === "windows") {
    return exitCode !== null ? (WINDOWS_EXIT_CODE_GLOSSES[exitCode] ?? null) : null;
  }
  if (signal !== null) return SIGNAL_GLOSSES[signal] ?? null;
  if (exitCode !== null) return EXIT_CODE_GLOSSES[exitCode] ?? null;
  return null;
}

/** "exit code 127" / "signal 9 (SIGKILL)"; on Windows a negative code in the hex people
 * search for, "exit code 0xC0000005". */
export function exitText(
  exitCode: number | null,
  signal: number | null,
  platform: ExitPlatform = PLATFORM,
): string | null {
  if (signal !== null) return `signal ${signal} (${signalName(signal)})`;
  if (exitCode === null) return null;
  if (platform === "windows" && exitCode < 0) {
    return `exit code 0x${(exitCode >>> 0).toString(16).toUpperCase().padStart(8, "0")}`;
  }
  return `exit code ${exitCode}`;
}

/** A short name for a failure: the HTTP status, the exit, or the kind. */
export function failureLabel(f: Failure): string {
  if (f.status !== null) return `HTTP ${f.status}${f.reason ? ` ${f.reason}` : ""}`;
  if (f.signal !== null) return `killed by ${signalName(f.signal)}`;
  if (f.exit_code !== null) return `exited with code ${f.exit_code}`;
  return (KIND_LABELS as Record<string, string>)[f.kind] ?? f.kind.replaceAll("_", " ");
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

/**
 * What a person does about a failure, where there is one thing to do. A server that needs
 * an OAuth sign-in (`sign_in`) is signed in, not fixed in the config: that is a static
 * credential the server refused (`auth`), which the config's header or token fixes.
 */
export function failureAdvice(f: Pick<Failure, "kind">): string | null {
  switch (f.kind) {
    case "sign_in":
      return "Sign in: this server uses OAuth and needs you to sign in once in your browser. Lifeline keeps the sign-in and refreshes it.";
    case "auth":
      return "Fix the credentials: check the Authorization header (or token) in the server's config.";
    default:
      return null;
  }
}
