import { describe, expect, test } from "vitest";
import { failure, iso, T0 } from "../test/fixtures";
import { exitGloss, exitText, failureLabel, groupFailures, groupSummary } from "./failures";
import type { FailureEntry } from "./model";

const entry = (seq: number, atMs: number, over: Parameters<typeof failure>[0] = {}): FailureEntry => ({
  seq,
  at: iso(atMs),
  failure: failure({ generation: seq, attempt: seq, ...over }),
});

describe("de-duplication", () => {
  test("14 refusals over 6 minutes are one line", () => {
    const entries = Array.from({ length: 14 }, (_, i) =>
      entry(i + 1, T0 + (i * 6 * 60_000) / 13, {
        message: `POST /mcp: could not connect to 127.0.0.1:${9000 + i}: connection refused`,
      }),
    );
    const groups = groupFailures(entries);
    expect(groups).toHaveLength(1);
    expect(groupSummary(groups[0]!)).toBe("connection failed ×14 over 6 min");
    expect(groups[0]!.first.seq).toBe(1);
    expect(groups[0]!.last.seq).toBe(14);
  });

  test("a different failure breaks the run; newest run first", () => {
    const crash = { kind: "process_exit", exit_code: 1, phase: null, stage: null, message: "exited with code 1" } as const;
    const entries = [
      entry(1, T0, crash),
      entry(2, T0 + 1_000),
      entry(3, T0 + 2_000),
      entry(4, T0 + 3_000, { kind: "rate_limited", status: 429, reason: "Too Many Requests", retry_after_ms: 45_000 }),
      entry(5, T0 + 4_000),
    ];
    const summaries = groupFailures(entries).map(groupSummary);
    expect(summaries).toEqual([
      "connection failed",
      "HTTP 429 Too Many Requests",
      "connection failed ×2 over 1 s",
      "exited with code 1",
    ]);
  });

  test("the same kind with a different HTTP status is not a repeat", () => {
    const groups = groupFailures([
      entry(1, T0, { kind: "server", status: 502, reason: "Bad Gateway" }),
      entry(2, T0 + 1, { kind: "server", status: 503, reason: "Service Unavailable" }),
    ]);
    expect(groups).toHaveLength(2);
  });
});

describe("labels", () => {
  test.each([
    [{ status: 401, reason: "Unauthorized", kind: "auth" }, "HTTP 401 Unauthorized"],
    [{ kind: "process_exit", exit_code: 127 }, "exited with code 127"],
    [{ kind: "process_exit", signal: 9 }, "killed by SIGKILL"],
    [{ kind: "timeout" }, "timed out"],
    [{ kind: "session_expired" }, "session expired"],
    [{ kind: "something_new" }, "something new"],
  ] as const)("%o → %s", (over, text) => expect(failureLabel(failure(over))).toBe(text));
});

describe("exit codes and signals are glossed", () => {
  test.each([
    [127, null, "command not found"],
    [126, null, "not executable (permission denied)"],
    [137, null, "killed by SIGKILL (often: out of memory)"],
    [143, null, "terminated by SIGTERM"],
    [139, null, "segmentation fault (SIGSEGV)"],
    [134, null, "aborted (SIGABRT)"],
    [null, 9, "killed (often: out of memory)"],
    [null, 15, "terminated"],
    [null, 11, "segmentation fault"],
    [1, null, null],
    [null, null, null],
  ])("code %s signal %s → %s", (code, signal, gloss) =>
    expect(exitGloss(code, signal, "unix")).toBe(gloss),
  );
});

describe("on Windows, exit codes are Windows'", () => {
  test.each([
    [-1073741819, "crashed: access violation", "exit code 0xC0000005"],
    [-1073741510, "interrupted (Ctrl+C)", "exit code 0xC000013A"],
    [9009, "command not found (cmd.exe)", "exit code 9009"],
    // No shell's 128 + signal on Windows: 137 is what the program meant by it.
    [137, null, "exit code 137"],
    [1, null, "exit code 1"],
  ])("code %s → %s (%s)", (code, gloss, text) => {
    expect(exitGloss(code, null, "windows")).toBe(gloss);
    expect(exitText(code, null, "windows")).toBe(text);
  });
});
