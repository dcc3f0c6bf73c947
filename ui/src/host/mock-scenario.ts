// The mock host's script: which servers exist and what each attempt of theirs meets, as
// functions of the time since the host was made (negative: the past, played at once).
//
//   filesystem  stdio  healthy; was SIGKILLed once two hours ago and came back
//   github      http   lost its stream 39 s ago; 429 with Retry-After 20 s, then 45 s; recovers at about +27 s
//   linear      sse    401 at connect: retired — auth
//   sqlite      stdio  crash loop (exit code 1 during initialize) since 3 min ago, climbing the
//                      quarantine ladder: level 2 now, probe in about half a minute, then level 3, then gave_up
//
// `?mock&servers=N` adds generated servers (mostly healthy, every seventh refusing connections)
// to exercise a long list.

import { EXIT_CODE_GLOSSES, SIGNAL_GLOSSES } from "./generated";
import type { Failure, Stage, Transport } from "./types";

/**
 * What the core says when a server process ends (crates/core/src/transport/stdio.rs,
 * `ended`), glossed from the core's own tables (lifeline_core::gloss, generated into
 * ./generated.ts), so the mock words an exit exactly as the app does.
 */
export function exitMessage(exit: { code: number } | { signal: number }, lastStderrLine?: string): string {
  const [status, gloss] =
    "signal" in exit
      ? [`signal ${exit.signal}`, SIGNAL_GLOSSES[exit.signal]]
      : [`exit code ${exit.code}`, EXIT_CODE_GLOSSES[exit.code]];
  const last = lastStderrLine ? `; its last stderr line: ${lastStderrLine}` : "";
  return `the server process exited with ${status}${gloss ? ` — ${gloss}` : ""}${last}`;
}

export type FailureSeed = Partial<Omit<Failure, "generation" | "attempt">> &
  Pick<Failure, "kind" | "message">;

export type FailAction = "backoff" | { retryAfterMs: number } | { retire: "auth" | "permission" | "config" };

export type Outcome =
  | { ok: true; stages: Stage[]; ms: number }
  | { ok: false; stages: Stage[]; ms: number; failure: FailureSeed; action: FailAction };

export interface AttemptContext {
  generation: number;
  /** 1-based attempt in this outage. */
  attempt: number;
  probe: boolean;
}

export interface ServerDef {
  name: string;
  transport: Transport;
  tools: string[];
  /** When the supervisor starts, in ms relative to the host's creation. */
  startAt: number;
  /** What an attempt started at `t` (relative ms) meets. */
  attempt(t: number, ctx: AttemptContext): Outcome;
  /** Connections lost at these relative times (if one is up then). */
  world?: { at: number; failure: FailureSeed }[];
  /** Health pings while ready. */
  pingEveryMs?: number;
  /** Round-trip time of the n-th measurement. */
  rtt(n: number): number;
}

const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;

const STDIO_OK: Stage[] = ["spawn", "initialize", "list_tools"];
const HTTP_OK: Stage[] = ["connect", "initialize", "list_tools"];

const ok = (stages: Stage[], ms: number): Outcome => ({ ok: true, stages, ms });

const filesystem: ServerDef = {
  name: "filesystem",
  transport: "stdio",
  tools: [
    "read_file",
    "read_multiple_files",
    "write_file",
    "edit_file",
    "create_directory",
    "list_directory",
    "directory_tree",
    "move_file",
    "search_files",
    "get_file_info",
    "list_allowed_directories",
  ],
  startAt: -(2 * HOUR + 15 * MIN),
  attempt: () => ok(STDIO_OK, 420),
  world: [
    {
      at: -(2 * HOUR + 10 * MIN),
      failure: {
        kind: "process_exit",
        signal: 9,
        message: exitMessage({ signal: 9 }),
      },
    },
  ],
  pingEveryMs: 10 * S,
  rtt: (n) => [2, 3, 2, 2, 4, 3][n % 6]!,
};

/** When github starts answering 429, and when it stops. */
const GITHUB_LOST = -39 * S;
const GITHUB_LIMIT_UNTIL = 20 * S;

const github: ServerDef = {
  name: "github",
  transport: "http",
  tools: [
    "create_issue",
    "get_issue",
    "list_issues",
    "update_issue",
    "add_issue_comment",
    "search_issues",
    "create_pull_request",
    "get_pull_request",
    "list_pull_requests",
    "merge_pull_request",
    "get_pull_request_diff",
    "create_branch",
    "list_branches",
    "list_commits",
    "get_commit",
    "get_file_contents",
    "create_or_update_file",
    "push_files",
    "search_code",
    "search_repositories",
    "create_repository",
    "fork_repository",
    "get_me",
    "list_notifications",
  ],
  startAt: -31 * MIN,
  attempt: (t, { attempt }) => {
    if (t < GITHUB_LOST || t >= GITHUB_LIMIT_UNTIL) return ok(HTTP_OK, 260);
    // The lost connection spent attempt 1; the first 429 asks for 20 s, the next for 45 s.
    const retryAfter = attempt <= 2 ? 20 * S : 45 * S;
    return {
      ok: false,
      stages: ["connect"],
      ms: 180,
      failure: {
        kind: "rate_limited",
        status: 429,
        reason: "Too Many Requests",
        retry_after_ms: retryAfter,
        method: "POST",
        url_path: "/mcp",
        message: `POST /mcp: 429 Too Many Requests; the server asked to wait ${retryAfter / S} s (Retry-After), so the next attempt waits exactly that long`,
      },
      action: { retryAfterMs: retryAfter },
    };
  },
  world: [
    {
      at: GITHUB_LOST,
      failure: {
        kind: "stream_lost",
        method: "GET",
        url_path: "/mcp",
        message:
          "GET /mcp: the event stream ended and resumption with Last-Event-ID failed 3 times; the connection is treated as lost",
      },
    },
  ],
  pingEveryMs: 15 * S,
  rtt: (n) => [48, 52, 61, 45, 57][n % 5]!,
};

const linear: ServerDef = {
  name: "linear",
  transport: "sse",
  tools: ["list_issues", "create_issue", "update_issue", "list_projects", "list_teams"],
  startAt: -12 * MIN,
  attempt: () => ({
    ok: false,
    stages: ["connect"],
    ms: 240,
    failure: {
      kind: "auth",
      status: 401,
      reason: "Unauthorized",
      method: "GET",
      url_path: "/sse",
      message:
        "GET /sse: 401 Unauthorized. The server rejected the credentials: update the token in headers.Authorization, then press Reconnect",
    },
    action: { retire: "auth" },
  }),
  rtt: () => 80,
};

/** The crash: the database file went bad; every start exits during initialize from then on. */
const SQLITE_CRASH = -179 * S;
const SQLITE_STDERR = "Error: SQLITE_CORRUPT: database disk image is malformed";

const sqlite: ServerDef = {
  name: "sqlite",
  transport: "stdio",
  tools: ["read_query", "write_query", "create_table", "list_tables", "describe_table", "append_insight"],
  startAt: -9 * MIN,
  attempt: (t) =>
    t < SQLITE_CRASH
      ? ok(STDIO_OK, 380)
      : {
          ok: false,
          stages: ["spawn", "initialize"],
          ms: 350,
          failure: {
            kind: "process_exit",
            exit_code: 1,
            message: exitMessage({ code: 1 }, SQLITE_STDERR),
          },
          action: "backoff",
        },
  world: [
    {
      at: SQLITE_CRASH,
      failure: {
        kind: "process_exit",
        exit_code: 1,
        message: exitMessage({ code: 1 }, SQLITE_STDERR),
      },
    },
  ],
  pingEveryMs: 30 * S,
  rtt: (n) => [1, 1, 2][n % 3]!,
};

const WORDS = [
  "notes", "search", "calendar", "jira", "slack", "postgres", "redis", "s3", "browser",
  "memory", "fetch", "time", "weather", "maps", "docs", "sentry", "figma", "notion",
  "stripe", "vercel",
];

/** A generated server: healthy, or (every seventh) refusing connections since it started. */
function generated(i: number): ServerDef {
  const name = `${WORDS[i % WORDS.length]}-${String(i).padStart(3, "0")}`;
  const refusing = i % 7 === 3;
  const transport: Transport = i % 3 === 0 ? "stdio" : "http";
  return {
    name,
    transport,
    tools: Array.from({ length: 3 + (i % 9) }, (_, k) => `tool_${k + 1}`),
    startAt: -((i * 37) % 600) * S,
    attempt: () =>
      refusing
        ? {
            ok: false,
            stages: ["connect"],
            ms: 5,
            failure: {
              kind: "transport",
              method: "POST",
              url_path: "/mcp",
              message: `POST /mcp: could not connect to 127.0.0.1:${7000 + i}: connection refused; is the server running?`,
            },
            action: "backoff",
          }
        : ok(transport === "stdio" ? STDIO_OK : HTTP_OK, 200 + (i % 5) * 40),
    pingEveryMs: 30 * S + (i % 10) * S,
    rtt: (n) => 2 + ((i + n) % 7) * 3,
  };
}

/** The four scripted servers, then generated ones up to `count`. */
export function scenario(count: number): ServerDef[] {
  const defs = [filesystem, github, linear, sqlite];
  for (let i = defs.length; i < count; i++) defs.push(generated(i));
  return defs;
}
