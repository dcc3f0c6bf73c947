// A dialog's commands, one at a time: `busy` while one runs (its buttons disabled), `error` from
// the last one that failed (shown as `kind` and `message`). Connect a client and Serve over HTTP
// share it.

import { toCommandError } from "../host/errors";
import type { CommandError } from "../host/types";

export class Pending {
  busy = $state(false);
  error = $state<CommandError | null>(null);

  /**
   * Runs `f` and resolves to its value, or to null when it failed: then `error` says why, unless
   * `take` handles that error itself (returns true), as a refusal that asks the user is.
   */
  async run<T>(f: () => Promise<T>, take?: (e: CommandError) => boolean): Promise<T | null> {
    this.busy = true;
    this.error = null;
    try {
      return await f();
    } catch (e) {
      const error = toCommandError(e);
      if (!take?.(error)) this.error = error;
      return null;
    } finally {
      this.busy = false;
    }
  }
}
