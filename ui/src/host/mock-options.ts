// What the mock host is asked to be: its options (from `?mock&…` in the URL), its clock (the
// system's in the browser, a manual one in tests) and the `appInfo` it reports, with the
// notices the shell would give (crates/desktop/src/demo.rs).

import type { AppInfo, CommandError } from "./types";

/** The replay's time source; `systemClock` in the browser, a manual one in tests. */
export interface MockClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: MockClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof setTimeout>),
};

export interface MockOptions {
  clock?: MockClock;
  /** How many servers: the four of the story, then generated ones up to this count. */
  servers?: number;
  /** Commands that reject with a CommandError, to exercise the error banner. */
  fail?: string[];
  /** Notice kinds `appInfo` reports (`demo`, `fixture_missing`, `fixture_failed`, `config`); none by default. */
  notices?: string[];
  /** Earlier runs in the history (mock-history.ts); none by default, as on a first start. */
  history?: boolean;
  /** Servers (with an OAuth sign-in: not stdio) that start needing sign-in (mock-auth.ts). */
  signIn?: string[];
}

/** `?mock&servers=100&fail=reset,disable&notice=demo,fixture_missing&signin=linear` */
export function mockOptionsFromUrl(url: URL): MockOptions {
  const q = url.searchParams;
  const opts: MockOptions = {};
  const n = Number(q.get("servers"));
  if (Number.isFinite(n) && n > 0) opts.servers = Math.min(Math.floor(n), 1000);
  const fail = q.get("fail");
  if (fail) opts.fail = fail.split(",").filter(Boolean);
  const notice = q.get("notice");
  if (notice) opts.notices = notice.split(",").filter(Boolean);
  if (q.has("history")) opts.history = true;
  const signIn = q.get("signin");
  if (signIn) opts.signIn = signIn.split(",").filter(Boolean);
  return opts;
}

const MOCK_CONFIG_PATH = "/home/ada/.config/lifeline/config.json";

/** What the shell would say for each notice kind (crates/desktop/src/demo.rs), for `?mock&notice=…`. */
const MOCK_NOTICE: Record<string, string> = {
  demo: `There is no config file at ${MOCK_CONFIG_PATH}, so this is a demo: the servers are built-in fixtures.`,
  fixture_missing:
    "The demo runs the lifeline-fixture binary, which is not next to the app (looked for /opt/lifeline/lifeline-fixture). Build it with `cargo build -p lifeline-it`, then restart the app.",
  fixture_failed: "The demo's HTTP fixture for RATE_LIMITED_URL did not start: address in use (simulated by ?mock&notice=fixture_failed).",
  config: `${MOCK_CONFIG_PATH}: expected \`mcpServers\` to be an object (simulated by ?mock&notice=config)`,
  history_locked:
    "The history file /home/ada/.local/share/lifeline/history.db is in use by another Lifeline instance, so this session's history is kept in memory only and earlier runs are not shown. Close the other instance and restart to keep history again.",
};

/** `appInfo` of the mock: a plain config-mode app, unless notices were asked for. */
export function mockAppInfo(notices: readonly string[] = []): AppInfo {
  const demo = notices.some((k) => k === "demo" || k.startsWith("fixture_"));
  return {
    version: "0.1.0",
    mode: demo ? "demo" : "config",
    config_path: notices.length > 0 ? MOCK_CONFIG_PATH : null,
    log_dir: null,
    notices: notices.map((kind) => ({ kind, message: MOCK_NOTICE[kind] ?? `a \`${kind}\` notice (simulated)` })),
  };
}

/** Throws what a stopped supervisor would, when `?mock&fail=COMMAND` asked for `command`. */
export function failIfAsked(failing: ReadonlySet<string>, command: string): void {
  if (!failing.has(command)) return;
  throw {
    kind: "supervisor_stopped",
    message: `the supervisor stopped before it could ${command.replaceAll("_", " ")} (simulated by ?mock&fail=${command})`,
  } satisfies CommandError;
}
