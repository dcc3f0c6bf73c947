// Command errors as the UI shows them: always `{kind, message}`.

import type { CommandError } from "./types";

/**
 * Whatever a host rejected with, as `{kind, message}`. The shell sends that shape; Tauri's own
 * IPC failures (an unknown command, a denied permission) arrive as bare strings.
 */
export function toCommandError(e: unknown): CommandError {
  if (typeof e === "object" && e !== null && "kind" in e && "message" in e) {
    const { kind, message, retry_after_ms } = e as { kind: unknown; message: unknown; retry_after_ms?: unknown };
    const error: CommandError = { kind: String(kind), message: String(message) };
    if (typeof retry_after_ms === "number") error.retry_after_ms = retry_after_ms;
    return error;
  }
  if (e instanceof Error) return { kind: "ipc", message: e.message };
  return { kind: "ipc", message: String(e) };
}
