// What the mock host answers for the detail panel beyond the recording (the tool definitions
// and stderr are recorded, mock-replay.ts): how each tool behaves when called (results, tool
// errors, progress), the resolved command of the stdio servers and their configs with the
// secret values masked, as the shell would send them. (The Hosts section is not made up here:
// mock-hosts.ts derives it from the recorded host events.)

import type { MockClock } from "./mock-options";
import type {
  CallOptions,
  CallResult,
  CommandError,
  Failure,
  MaskedServerConfig,
  ResolvedCommand,
  ServerPolicy,
  Transport,
} from "./types";

/** How a mock call plays out: `steps` progress notifications `stepMs` apart, then the result. */
export interface MockBehaviour {
  steps: number;
  stepMs: number;
  result: CallResult;
}

/**
 * What a call to one of the recorded servers' tools (lifeline-fixture's: echo, add, slow,
 * progress, fail, …; tests/FIXTURE.md) answers: the fixture's answer, played on the clock.
 */
export function mockBehaviour(tool: string, args: Record<string, unknown>): MockBehaviour {
  const text = (t: string): CallResult => ({ content: [{ type: "text", text: t }], isError: false });
  const num = (v: unknown, fallback: number) => (typeof v === "number" && Number.isFinite(v) ? v : fallback);
  switch (tool) {
    case "echo":
      return { steps: 0, stepMs: 0, result: text(String(args.text ?? "")) };
    case "add":
      return { steps: 0, stepMs: 0, result: text(String(num(args.a, 0) + num(args.b, 0))) };
    case "progress": {
      const steps = Math.max(0, Math.min(100, Math.floor(num(args.steps, 5))));
      return { steps, stepMs: Math.max(1, num(args.interval_ms, 400)), result: text(`done after ${steps} steps`) };
    }
    case "slow":
      return { steps: 1, stepMs: Math.max(1, num(args.ms, 1000)), result: text("slow: done") };
    case "fail":
      return { steps: 0, stepMs: 0, result: { content: [{ type: "text", text: "the tool failed (fixture `fail`)" }], isError: true } };
    default:
      return { steps: 0, stepMs: 0, result: text(`${tool}: ok (mock)`) };
  }
}

const PATH = ["/home/ada/.local/bin", "/usr/local/bin", "/usr/bin", "/bin"];

export function mockCommand(server: string, transport: Transport): ResolvedCommand | null {
  if (transport !== "stdio") return null;
  if (server === "sqlite") {
    return {
      command: "uvx",
      program: null,
      args: ["mcp-server-sqlite", "--db-path", "/home/ada/data/app.db"],
      cwd: null,
      path: PATH,
      path_source: "app",
      env_names: [],
      problem: `\`uvx\` was not found in PATH: ${PATH.join(", ")}; install it or give an absolute path in the config`,
    };
  }
  return {
    command: "npx",
    program: "/usr/local/bin/npx",
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/home/ada/projects", "--token=***"],
    cwd: "/home/ada",
    path: PATH,
    path_source: "app",
    env_names: ["NODE_OPTIONS", "FS_API_TOKEN"],
    problem: null,
  };
}

/** The defaults of DESIGN.md, as the recorded servers ran with them, but for health pings:
 * the recording turns them off (tests/tests/it/recording/driver.rs says why). */
export function mockPolicy(): ServerPolicy {
  return {
    reconnect: true,
    initial_delay_ms: 500,
    max_delay_ms: 30_000,
    jitter_percent: 20,
    max_attempts: 10,
    quarantine_ms: [30_000, 60_000, 120_000],
    establish_ms: 60_000,
    request_ms: 60_000,
    ping_interval_ms: null,
    ping_timeout_ms: 10_000,
    max_concurrent_calls: 4,
  };
}

export function mockConfig(server: string, transport: Transport, disabled: boolean): MaskedServerConfig {
  const command = mockCommand(server, transport);
  const head: MaskedServerConfig = command
    ? {
        type: "stdio",
        command: command.command,
        args: command.args,
        env: Object.fromEntries(command.env_names.map((n) => [n, "***"])),
        cwd: command.cwd,
      }
    : {
        type: transport,
        url: `https://mcp.${server}.example.com/mcp?token=***`,
        headers: { Authorization: "***" },
      };
  return {
    name: server,
    ...head,
    disabled,
    reconnect: { enabled: true, initialDelayMs: 500, maxDelayMs: 30000, maxAttempts: 10, quarantineMs: [30000, 60000, 120000] },
    timeouts: { establishMs: 60000, requestMs: 60000, pingIntervalMs: 0, pingTimeoutMs: 10000 },
    maxConcurrentCalls: 4,
  };
}

/** The failure of a call cancelled by its `callId`. */
export function cancelledFailure(generation: number, message: string): Failure {
  return {
    kind: "cancelled",
    phase: "call",
    stage: null,
    status: null,
    reason: null,
    retry_after_ms: null,
    method: "tools/call",
    url_path: null,
    exit_code: null,
    signal: null,
    attempt: null,
    generation,
    message,
  };
}

/** `steps` progress notifications of a mock call `stepMs` apart on `clock`; a call named by
 * `opts.callId` is cancellable through `running` (then `cancelled` says what to reject with,
 * given the time the call ran). */
export function playProgress(
  clock: MockClock,
  running: Map<string, () => void>,
  steps: number,
  stepMs: number,
  opts: CallOptions,
  cancelled: (ms: number) => CommandError,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let step = 0;
    let handle: unknown = null;
    const done = () => {
      if (opts.callId !== undefined) running.delete(opts.callId);
    };
    const next = () => {
      step += 1;
      opts.onProgress?.({ call_id: opts.callId ?? null, progress: step, total: steps, message: `step ${step} of ${steps}` });
      if (step >= steps) {
        done();
        resolve();
      } else {
        handle = clock.setTimeout(next, stepMs);
      }
    };
    handle = clock.setTimeout(next, stepMs);
    if (opts.callId !== undefined) {
      running.set(opts.callId, () => {
        clock.clearTimeout(handle);
        done();
        reject(cancelled(step * stepMs));
      });
    }
  });
}
