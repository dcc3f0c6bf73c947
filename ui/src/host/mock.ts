// An in-browser host: a small discrete-event simulation of the supervisor's state machine
// (docs/policy.md: backoff 500 ms ×2 to 30 s with ±20 % seeded jitter, 10 attempts a round,
// quarantine 30 s → 60 s → 120 s → gave_up, Retry-After honoured exactly, retire on 401).
// What each server meets is scripted in mock-scenario.ts relative to the moment the host is
// made, so the same page load always shows the same story: its past is played instantly (and
// replayed to every subscriber), its future runs on the clock. Tests inject a manual clock.

import type { Host } from "./index";
import { mockBundle } from "./mock-bundle";
import { type MockHistory, mockHistory, queryRows } from "./mock-history";
import type {
  AppInfo,
  CallOptions,
  CallResult,
  BundleExported,
  BundlePreview,
  CommandError,
  ConfigView,
  DetectedClient,
  Event,
  Failure,
  GenerationStderr,
  MaskedServerConfig,
  ResolvedCommand,
  HistoryQuery,
  PastCall,
  PastEvent,
  PastFailure,
  ServerPolicy,
  ServerView,
  Stage,
  StateInfo,
  StateName,
  ToolDef,
  Transport,
  ImportChoice,
  ImportOutcome,
  ServerForm,
} from "./types";
import { mockBehaviour, mockCommand, mockConfig, mockPolicy, mockStderr, mockToolDefs } from "./mock-detail";
import { type FailAction, type FailureSeed, type ServerDef, scenario } from "./mock-scenario";
import { checked, detect, importChoices, masked, scenarioForms } from "./mock-config";

/** The simulation's time source; `systemClock` in the browser, a manual one in tests. */
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
  /** How many servers: the four scripted ones, then generated ones up to this count. */
  servers?: number;
  /** Commands that reject with a CommandError, to exercise the error banner. */
  fail?: string[];
  /** Jitter seed. */
  seed?: number;
  /** Notice kinds `appInfo` reports (`demo`, `fixture_missing`, `fixture_failed`, `config`); none by default. */
  notices?: string[];
  /** Earlier runs in the history (mock-history.ts); none by default, as on a first start. */
  history?: boolean;
}

/** `?mock&servers=100&fail=reset,disable&seed=7&notice=demo,fixture_missing` */
export function mockOptionsFromUrl(url: URL): MockOptions {
  const q = url.searchParams;
  const opts: MockOptions = {};
  const n = Number(q.get("servers"));
  if (Number.isFinite(n) && n > 0) opts.servers = Math.min(Math.floor(n), 1000);
  const fail = q.get("fail");
  if (fail) opts.fail = fail.split(",").filter(Boolean);
  const seed = Number(q.get("seed"));
  if (q.has("seed") && Number.isFinite(seed)) opts.seed = seed;
  const notice = q.get("notice");
  if (notice) opts.notices = notice.split(",").filter(Boolean);
  if (q.has("history")) opts.history = true;
  return opts;
}

const MOCK_CONFIG_PATH = "/home/ada/.config/lifeline/config.json";

/** What the shell would say for each notice kind (src-tauri/src/demo.rs), for `?mock&notice=…`. */
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

export const POLICY = {
  initialDelayMs: 500,
  maxDelayMs: 30_000,
  maxAttempts: 10,
  jitter: 0.2,
  stabilityMs: 30_000,
  quarantineMs: [30_000, 60_000, 120_000],
} as const;

type Phase =
  | "connecting"
  | "ready"
  | "waiting"
  | "quarantined"
  | "gave_up"
  | "retired"
  | "disabled"
  | "stopping";

/** The supervisor's inner state for one server (state.rs `State`, in miniature). */
interface Sim {
  def: ServerDef;
  view: ServerView;
  phase: Phase;
  stage: Stage | null;
  probe: boolean;
  /** Failed attempts in this outage. */
  failures: number;
  level: number;
  established: boolean;
  readySince: number | null;
  cause: Failure | null;
  retireReason: string | null;
  until: number | null;
}

type Tag = "timer" | "attempt" | "world";

interface Pending {
  at: number;
  id: number;
  server: string;
  tag: Tag;
  fn: () => void;
}

type Body = Event extends infer E
  ? E extends Event
    ? Omit<E, "v" | "seq" | "at" | "server" | "generation">
    : never
  : never;

/** A recorded command, for tests: `{command: "reconnect", server: "sqlite"}`. */
export interface MockCall {
  command: string;
  server?: string;
  tool?: string;
}

const FAILED: ReadonlySet<StateName> = new Set([
  "quarantined",
  "gave_up",
  "retired",
]);

const CANCELLED = "the call was cancelled; the server was sent notifications/cancelled";

export class MockHost implements Host {
  readonly kind = "mock" as const;
  /** Every command received, in order. */
  readonly calls: MockCall[] = [];
  /** The moment the scenario is relative to. */
  readonly t0: number;

  private readonly clock: MockClock;
  private readonly sims = new Map<string, Sim>();
  private readonly log: Event[] = [];
  private readonly listeners = new Set<(e: Event) => void>();
  private readonly failing: Set<string>;
  private notices: readonly string[];
  private readonly history: MockHistory;
  private pending: Pending[] = [];
  private previewed: BundlePreview | null = null;
  private nextId = 1;
  private seq = 0;
  private simNow: number | null = null;
  private pumping = false;
  private armed: { at: number; handle: unknown } | null = null;
  private rng: () => number;
  /** Calls in flight that a `callId` named, by that name: their cancel. */
  private readonly running = new Map<string, () => void>();

  constructor(opts: MockOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.failing = new Set(opts.fail ?? []);
    this.notices = opts.notices ?? [];
    this.history = opts.history ? mockHistory(this.clock.now()) : { events: [], failures: [], calls: [] };
    this.rng = mulberry32(opts.seed ?? 20261129);
    this.t0 = this.clock.now();
    for (const def of scenario(opts.servers ?? 4)) {
      const sim: Sim = {
        def,
        view: initialView(def.name, def.transport),
        phase: "connecting",
        stage: null,
        probe: false,
        failures: 0,
        level: 0,
        established: false,
        readySince: null,
        cause: null,
        retireReason: null,
        until: null,
      };
      this.sims.set(def.name, sim);
      this.schedule(def.name, this.t0 + def.startAt, "attempt", () => this.startAttempt(sim, false));
      for (const w of def.world ?? []) {
        this.schedule(def.name, this.t0 + w.at, "world", () => this.lose(sim, w.failure));
      }
    }
    this.pump();
  }

  // ## Host

  async snapshot(): Promise<ServerView[]> {
    this.pump();
    return [...this.sims.values()].map((s) => structuredClone(s.view));
  }

  async subscribe(onEvent: (e: Event) => void): Promise<() => void> {
    this.pump();
    for (const e of this.log) onEvent(structuredClone(e));
    this.listeners.add(onEvent);
    return () => {
      this.listeners.delete(onEvent);
    };
  }

  reconnect(server: string): Promise<void> {
    return this.command("reconnect", server, (sim) => {
      switch (sim.phase) {
        case "waiting":
        case "ready":
          return this.startAttempt(sim, false);
        case "quarantined":
          return this.startAttempt(sim, true);
        case "gave_up":
        case "retired":
          sim.failures = 0;
          return this.startAttempt(sim, false);
        default:
          return; // connecting, stopping, disabled: nothing to skip
      }
    });
  }

  reset(server: string): Promise<void> {
    return this.command("reset", server, (sim) => {
      if (sim.phase === "disabled" || sim.phase === "stopping") return;
      sim.failures = 0;
      sim.level = 0;
      this.startAttempt(sim, false);
    });
  }

  disable(server: string): Promise<void> {
    return this.command("disable", server, (sim) => {
      if (sim.phase === "disabled" || sim.phase === "stopping") return;
      sim.phase = "stopping";
      this.emitState(sim);
      this.schedule(sim.def.name, this.now() + 150, "timer", () => {
        sim.phase = "disabled";
        sim.cause = null;
        sim.failures = 0;
        sim.level = 0;
        this.emitState(sim);
        this.dropTools(sim);
      });
    });
  }

  enable(server: string): Promise<void> {
    return this.command("enable", server, (sim) => {
      if (sim.phase !== "disabled") return;
      sim.established = false;
      this.startAttempt(sim, false);
    });
  }

  async reconnectAllFailed(): Promise<string[]> {
    this.pump();
    this.calls.push({ command: "reconnect_all_failed" });
    this.maybeFail("reconnect_all_failed");
    const failed = [...this.sims.values()]
      .filter((s) => s.view.state !== null && FAILED.has(s.view.state))
      .map((s) => s.def.name);
    for (const name of failed) await this.reconnect(name);
    return failed;
  }

  async callTool(server: string, tool: string, args: unknown, opts: CallOptions = {}): Promise<unknown> {
    this.pump();
    this.calls.push({ command: "call_tool", server, tool });
    this.maybeFail("call_tool");
    const sim = this.sim(server);
    if (sim.phase !== "ready") {
      throw {
        kind: "not_ready",
        message: `\`${server}\` is ${sim.view.state ?? "starting"}; the call was not sent`,
      } satisfies CommandError;
    }
    const argsObj = typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {};
    const plan = mockBehaviour(tool, argsObj);
    if (opts.callId !== undefined && this.running.has(opts.callId)) {
      throw {
        kind: "call_id_in_use",
        message: `a call named \`${opts.callId}\` is already in flight; give each call its own call_id`,
      } satisfies CommandError;
    }
    const ms = sim.def.rtt(this.seq) + plan.steps * plan.stepMs;
    if (plan.steps > 0) await this.playProgress(sim, tool, plan.steps, plan.stepMs, opts);
    const outcome = plan.result.isError ? "tool_error" : "ok";
    this.emit(sim, { type: "call", tool, outcome, duration_ms: ms, error: null });
    this.emit(sim, { type: "round_trip", round_trip_ms: ms });
    return structuredClone(plan.result);
  }

  /** `steps` progress notifications `stepMs` apart on the mock's clock; cancellable by `callId`. */
  private playProgress(sim: Sim, tool: string, steps: number, stepMs: number, opts: CallOptions): Promise<void> {
    return new Promise((resolve, reject) => {
      let step = 0;
      let handle: unknown = null;
      const done = () => {
        if (opts.callId !== undefined) this.running.delete(opts.callId);
      };
      const next = () => {
        step += 1;
        opts.onProgress?.({ call_id: opts.callId ?? null, progress: step, total: steps, message: `searched ${step} of ${steps} directories` });
        if (step >= steps) {
          done();
          resolve();
        } else {
          handle = this.clock.setTimeout(next, stepMs);
        }
      };
      handle = this.clock.setTimeout(next, stepMs);
      if (opts.callId !== undefined) {
        this.running.set(opts.callId, () => {
          this.clock.clearTimeout(handle);
          done();
          const failure: Failure = {
            ...this.failure(sim, { kind: "cancelled", message: CANCELLED }),
            phase: "call",
            method: "tools/call",
          };
          this.emit(sim, { type: "call", tool, outcome: "error", duration_ms: step * stepMs, error: failure });
          reject({ kind: "cancelled", message: CANCELLED } satisfies CommandError);
        });
      }
    });
  }

  async toolList(server: string): Promise<ToolDef[]> {
    this.pump();
    this.calls.push({ command: "tool_list", server });
    return mockToolDefs(this.sim(server).view.tools);
  }

  async cancelCall(callId: string): Promise<boolean> {
    this.calls.push({ command: "cancel_call" });
    const cancel = this.running.get(callId);
    cancel?.();
    return cancel !== undefined;
  }

  async serverStderr(server: string): Promise<GenerationStderr[]> {
    this.pump();
    const sim = this.sim(server);
    return mockStderr(server, sim.def.transport, sim.view.generation);
  }

  async serverCommand(server: string): Promise<ResolvedCommand | null> {
    return mockCommand(server, this.sim(server).def.transport);
  }

  async serverPolicy(server: string): Promise<ServerPolicy> {
    this.sim(server);
    return mockPolicy();
  }

  async serverConfig(server: string): Promise<MaskedServerConfig> {
    const sim = this.sim(server);
    return mockConfig(server, sim.def.transport, sim.view.state === "disabled");
  }

  /** Not recorded in `calls`: it is not a command on a server. */
  async painted(): Promise<void> {}

  /** Not recorded in `calls`: it is not a command on a server. */
  async appInfo(): Promise<AppInfo> {
    return mockAppInfo(this.notices);
  }

  /** The history queries are not recorded in `calls` either: they change nothing. */
  async historyEvents(query: HistoryQuery): Promise<PastEvent[]> {
    return queryRows(this.history.events, query);
  }

  async historyFailures(query: HistoryQuery): Promise<PastFailure[]> {
    return queryRows(this.history.failures, query);
  }

  async historyCalls(query: HistoryQuery): Promise<PastCall[]> {
    return queryRows(this.history.calls, query);
  }

  /** The bundle the shell would build from these servers and events (mock-bundle.ts). */
  async bundlePreview(): Promise<BundlePreview> {
    this.pump();
    this.calls.push({ command: "bundle_preview" });
    this.maybeFail("bundle_preview");
    const views = [...this.sims.values()].map((s) => s.view);
    this.previewed = await mockBundle(views, this.log, this.now());
    return structuredClone(this.previewed);
  }

  /** No dialog in a browser: the suggested path, as if the person accepted it. */
  async chooseSavePath(suggested: string): Promise<string | null> {
    this.calls.push({ command: "choose_save_path" });
    return suggested;
  }

  /** Writes nothing: says where the previewed bundle would be and how big, or rejects as the shell does. */
  async bundleExport(path: string): Promise<BundleExported> {
    this.calls.push({ command: "bundle_export" });
    this.maybeFail("bundle_export");
    if (!path.startsWith("/")) {
      throw { kind: "config", message: `\`${path}\` is not a full path; give one such as /home/ada/Downloads/lifeline-diagnostics.zip` } satisfies CommandError;
    }
    const preview = this.previewed ?? (await this.bundlePreview());
    // Deflate shrinks JSON text to about a fifth; the mock only needs a plausible size.
    return { path, bytes: Math.ceil(preview.total_bytes / 5) + 22 * preview.files.length };
  }

  // ## The config (mock-config.ts): edits start, replace and stop simulated servers

  /** The file's servers with their secrets; `null` until first read (built from the scenario). */
  private forms: ServerForm[] | null = null;
  private readonly configListeners = new Set<(info: AppInfo) => void>();

  private get demo(): boolean {
    return mockAppInfo(this.notices).mode === "demo";
  }

  private configForms(): ServerForm[] {
    this.forms ??= this.demo ? [] : scenarioForms([...this.sims.values()].map((s) => s.def));
    return this.forms;
  }

  private configured(): Set<string> {
    return new Set(this.configForms().map((f) => f.name));
  }

  async configGet(): Promise<ConfigView> {
    const info = mockAppInfo(this.notices);
    return { path: info.config_path, mode: info.mode, servers: this.configForms().map(masked), problem: null };
  }

  async serverAdd(server: ServerForm): Promise<void> {
    this.pump();
    this.calls.push({ command: "server_add", server: server.name });
    this.maybeFail("server_add");
    const taken = this.configured();
    const entry = checked(server, null, (n) => taken.has(n));
    this.leaveDemo();
    this.configForms().push(entry);
    this.startServer(entry);
    this.configChanged();
  }

  async serverEdit(name: string, server: ServerForm): Promise<void> {
    this.pump();
    this.calls.push({ command: "server_edit", server: name });
    this.maybeFail("server_edit");
    const forms = this.configForms();
    const i = forms.findIndex((f) => f.name === name);
    if (i < 0) throw { kind: "unknown_server", message: `there is no server named \`${name}\`` } satisfies CommandError;
    const taken = this.configured();
    const entry = checked(server, forms[i]!, (n) => n !== name && taken.has(n));
    forms[i] = entry;
    this.stopServer(name);
    this.startServer(entry);
    this.configChanged();
  }

  async serverRemove(name: string): Promise<void> {
    this.pump();
    this.calls.push({ command: "server_remove", server: name });
    this.maybeFail("server_remove");
    const forms = this.configForms();
    const i = forms.findIndex((f) => f.name === name);
    if (i < 0) throw { kind: "unknown_server", message: `there is no server named \`${name}\`` } satisfies CommandError;
    forms.splice(i, 1);
    this.stopServer(name);
    this.configChanged();
  }

  async importDetect(): Promise<DetectedClient[]> {
    const taken = this.configured();
    return detect((n) => taken.has(n));
  }

  async importApply(sources: ImportChoice[]): Promise<ImportOutcome> {
    this.pump();
    this.calls.push({ command: "import_apply" });
    this.maybeFail("import_apply");
    const taken = this.configured();
    const { forms, outcome } = importChoices(sources, (n) => taken.has(n));
    if (forms.length > 0) {
      this.leaveDemo();
      for (const f of forms) {
        this.configForms().push(f);
        this.startServer(f);
      }
      this.configChanged();
    }
    return outcome;
  }

  async onConfigChanged(listener: (info: AppInfo) => void): Promise<() => void> {
    this.configListeners.add(listener);
    return () => {
      this.configListeners.delete(listener);
    };
  }

  /** The first write in demo mode creates the file: the demo's servers stop, its notices go. */
  private leaveDemo(): void {
    if (!this.demo) return;
    for (const name of [...this.sims.keys()]) this.stopServer(name);
    this.notices = this.notices.filter((k) => k === "config");
    this.forms = [];
  }

  /** A new supervisor for `f`: healthy in the simulation, or disabled; in the file's order. */
  private startServer(f: ServerForm): void {
    const stages: Stage[] = f.transport === "stdio" ? ["spawn", "initialize", "list_tools"] : ["connect", "initialize", "list_tools"];
    const def: ServerDef = {
      name: f.name,
      transport: f.transport,
      tools: ["echo", "add"],
      startAt: this.now() - this.t0,
      attempt: () => ({ ok: true, stages, ms: 300 }),
      rtt: () => 3,
    };
    const sim = newSim(def);
    this.sims.set(f.name, sim);
    const order = this.configForms().map((c) => c.name);
    const sorted = [...this.sims.entries()].sort(([a], [b]) => order.indexOf(a) - order.indexOf(b));
    this.sims.clear();
    for (const [name, s] of sorted) this.sims.set(name, s);
    if (f.disabled) {
      sim.phase = "disabled";
      this.emitState(sim, 1);
    } else {
      this.schedule(f.name, this.now(), "attempt", () => this.startAttempt(sim, false));
    }
  }

  /** Stops and forgets a server: its timers, its world events, its row. */
  private stopServer(name: string): void {
    this.pending = this.pending.filter((p) => p.server !== name);
    this.sims.delete(name);
    this.arm();
  }

  private configChanged(): void {
    const info = mockAppInfo(this.notices);
    for (const listener of this.configListeners) listener(structuredClone(info));
  }

  // ## Test hooks

  /** Runs everything that is due by the clock's now (the manual clock's `advance` calls this through its timers). */
  pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (;;) {
        const due = this.pending[0];
        if (!due || due.at > this.clock.now()) break;
        this.pending.shift();
        this.simNow = due.at;
        due.fn();
      }
    } finally {
      this.simNow = null;
      this.pumping = false;
    }
    this.arm();
  }

  /** Every event emitted so far (the replay a new subscriber gets). */
  events(): readonly Event[] {
    return this.log;
  }

  // ## The supervisor, in miniature

  private startAttempt(sim: Sim, probe: boolean): void {
    this.cancel(sim.def.name);
    const gen = sim.view.generation + 1;
    const outcome = sim.def.attempt(this.now() - this.t0, {
      generation: gen,
      attempt: sim.failures + 1,
      probe,
    });
    sim.phase = "connecting";
    sim.probe = probe;
    sim.until = null;
    const stages = outcome.stages;
    const step = outcome.ms / Math.max(stages.length, 1);
    sim.stage = stages[0] ?? null;
    this.emitState(sim, gen);
    stages.slice(1).forEach((stage, i) => {
      this.schedule(sim.def.name, this.now() + step * (i + 1), "attempt", () => {
        sim.stage = stage;
        this.emitState(sim);
      });
    });
    this.schedule(sim.def.name, this.now() + outcome.ms, "attempt", () => {
      if (outcome.ok) this.ready(sim);
      else this.fail(sim, outcome.failure, outcome.action, probe);
    });
  }

  private ready(sim: Sim): void {
    sim.phase = "ready";
    sim.stage = null;
    sim.probe = false;
    sim.established = true;
    sim.readySince = this.now();
    sim.cause = null;
    sim.until = null;
    this.emitState(sim);
    const names = sim.def.tools;
    this.emit(sim, { type: "tools", count: names.length, stale: false, names: [...names] });
    this.emit(sim, { type: "round_trip", round_trip_ms: sim.def.rtt(this.seq) });
    this.schedulePing(sim, sim.view.generation);
  }

  private schedulePing(sim: Sim, gen: number): void {
    const every = sim.def.pingEveryMs;
    if (!every) return;
    this.schedule(sim.def.name, this.now() + every, "world", () => {
      if (sim.phase !== "ready" || sim.view.generation !== gen) return;
      // Keep the replayed log short: pings older than two minutes are not recorded.
      if (this.now() >= this.t0 - 120_000) {
        this.emit(sim, { type: "round_trip", round_trip_ms: sim.def.rtt(this.seq) });
      }
      this.schedulePing(sim, gen);
    });
  }

  /** An established connection ended ("connection lost"). */
  private lose(sim: Sim, seed: FailureSeed): void {
    if (sim.phase !== "ready") return;
    const upFor = this.now() - (sim.readySince ?? this.now());
    if (upFor >= POLICY.stabilityMs) {
      // The stability window passed: the budget resets and the ladder drops a level.
      sim.failures = 0;
      sim.level = Math.max(0, sim.level - 1);
    }
    this.emit(sim, { type: "tools", count: sim.def.tools.length, stale: true, names: [...sim.def.tools] });
    this.fail(sim, seed, "backoff", false);
  }

  private fail(sim: Sim, seed: FailureSeed, action: FailAction, probe: boolean): void {
    const failure = this.failure(sim, seed);
    sim.cause = failure;
    this.emit(sim, { type: "failure", failure });
    if (typeof action === "object" && "retire" in action) {
      sim.phase = "retired";
      sim.retireReason = action.retire;
      sim.until = null;
      this.emitState(sim);
      this.dropTools(sim);
      return;
    }
    const serverDelay = typeof action === "object" ? action.retryAfterMs : null;
    sim.failures += 1;
    if (probe || sim.failures >= POLICY.maxAttempts) {
      if (sim.level >= POLICY.quarantineMs.length) {
        sim.phase = "gave_up";
        sim.until = null;
        this.emitState(sim);
        this.dropTools(sim);
        return;
      }
      sim.level += 1;
      sim.failures = 0;
      const cooldown = POLICY.quarantineMs[sim.level - 1] ?? 120_000;
      sim.phase = "quarantined";
      this.wait(sim, Math.max(cooldown, serverDelay ?? 0), true);
      return;
    }
    sim.phase = "waiting";
    this.wait(sim, serverDelay ?? this.backoff(sim.failures), false);
  }

  private wait(sim: Sim, delay: number, probeNext: boolean): void {
    sim.stage = null;
    sim.until = this.now() + delay;
    this.emitState(sim);
    this.schedule(sim.def.name, sim.until, "timer", () => this.startAttempt(sim, probeNext));
  }

  private backoff(failures: number): number {
    const base = Math.min(POLICY.initialDelayMs * 2 ** (failures - 1), POLICY.maxDelayMs);
    const jitter = 1 + POLICY.jitter * (2 * this.rng() - 1);
    return Math.round(base * jitter);
  }

  private failure(sim: Sim, seed: FailureSeed): Failure {
    return {
      kind: seed.kind,
      phase: seed.phase === undefined ? (sim.phase === "connecting" ? "connect" : null) : seed.phase,
      stage: seed.stage === undefined ? (sim.phase === "connecting" ? sim.stage : null) : seed.stage,
      status: seed.status ?? null,
      reason: seed.reason ?? null,
      retry_after_ms: seed.retry_after_ms ?? null,
      method: seed.method ?? null,
      url_path: seed.url_path ?? null,
      exit_code: seed.exit_code ?? null,
      signal: seed.signal ?? null,
      attempt: sim.phase === "connecting" ? sim.failures + 1 : null,
      generation: sim.view.generation,
      message: seed.message,
    };
  }

  private dropTools(sim: Sim): void {
    if (sim.view.tools.length === 0 && !sim.view.tools_stale) return;
    this.emit(sim, { type: "tools", count: 0, stale: false, names: [] });
  }

  private info(sim: Sim): StateInfo {
    const waiting = sim.phase === "waiting" || sim.phase === "quarantined";
    const state: StateName =
      sim.phase === "waiting" ? (sim.established ? "reconnecting" : "retrying") : sim.phase;
    const attempt =
      sim.phase === "connecting" ? sim.failures + 1 : sim.phase === "waiting" ? sim.failures : null;
    return {
      state,
      stage: sim.phase === "connecting" ? sim.stage : null,
      attempt,
      max_attempts: attempt === null ? null : POLICY.maxAttempts,
      delay_ms: waiting && sim.until !== null ? Math.max(0, sim.until - this.now()) : null,
      next_attempt_at: waiting && sim.until !== null ? iso(sim.until) : null,
      quarantine_level: sim.level,
      reason:
        sim.phase === "retired"
          ? sim.retireReason
          : sim.phase === "connecting" && sim.probe
            ? "probe"
            : null,
      cause: sim.phase === "ready" || sim.phase === "disabled" ? null : sim.cause,
      protocol_version: state === "ready" ? "2025-06-18" : null,
    };
  }

  private emitState(sim: Sim, generation = sim.view.generation): void {
    this.emit(sim, { type: "state", ...this.info(sim) }, generation);
  }

  private emit(sim: Sim, body: Body, generation = sim.view.generation): void {
    const e = {
      v: 1,
      seq: ++this.seq,
      at: iso(this.now()),
      server: sim.def.name,
      generation,
      ...body,
    } as Event;
    applyToView(sim.view, e);
    this.log.push(e);
    for (const l of this.listeners) l(structuredClone(e));
  }

  // ## Plumbing

  private now(): number {
    return this.simNow ?? this.clock.now();
  }

  private sim(server: string): Sim {
    const sim = this.sims.get(server);
    if (!sim) throw { kind: "unknown_server", message: `no server named \`${server}\`` } satisfies CommandError;
    return sim;
  }

  private maybeFail(command: string): void {
    if (this.failing.has(command)) {
      throw {
        kind: "supervisor_stopped",
        message: `the supervisor stopped before it could ${command.replaceAll("_", " ")} (simulated by ?mock&fail=${command})`,
      } satisfies CommandError;
    }
  }

  private async command(command: string, server: string, act: (sim: Sim) => void): Promise<void> {
    this.pump();
    this.calls.push({ command, server });
    this.maybeFail(command);
    act(this.sim(server));
    this.arm();
  }

  private schedule(server: string, at: number, tag: Tag, fn: () => void): void {
    const p: Pending = { at, id: this.nextId++, server, tag, fn };
    let i = this.pending.length;
    while (i > 0 && this.pending[i - 1]!.at > at) i--;
    this.pending.splice(i, 0, p);
    if (!this.pumping) this.arm();
  }

  /** Drops the server's timer and in-flight attempt (as `step` disarms and fences a generation). */
  private cancel(server: string): void {
    this.pending = this.pending.filter((p) => p.server !== server || p.tag === "world");
  }

  private arm(): void {
    const next = this.pending[0];
    if (this.armed && (!next || this.armed.at !== next.at)) {
      this.clock.clearTimeout(this.armed.handle);
      this.armed = null;
    }
    if (!next || this.armed) return;
    const handle = this.clock.setTimeout(
      () => {
        this.armed = null;
        this.pump();
      },
      Math.max(0, next.at - this.clock.now()),
    );
    this.armed = { at: next.at, handle };
  }
}

function newSim(def: ServerDef): Sim {
  return {
    def,
    view: initialView(def.name, def.transport),
    phase: "connecting",
    stage: null,
    probe: false,
    failures: 0,
    level: 0,
    established: false,
    readySince: null,
    cause: null,
    retireReason: null,
    until: null,
  };
}

function initialView(server: string, transport: Transport): ServerView {
  return {
    server,
    generation: 0,
    state: null,
    stage: null,
    attempt: null,
    max_attempts: null,
    delay_ms: null,
    next_attempt_at: null,
    quarantine_level: 0,
    reason: null,
    cause: null,
    tools: [],
    tools_stale: false,
    last_round_trip_ms: null,
    last_round_trip_at: null,
    protocol_version: null,
    transport,
    restarts: 0,
    last_restart_at: null,
  };
}

/** What the shell keeps per server, updated by one event. */
function applyToView(view: ServerView, e: Event): void {
  switch (e.type) {
    case "state": {
      if (e.state === "connecting" && e.generation > view.generation && view.generation >= 1) {
        view.restarts += 1;
        view.last_restart_at = e.at;
      }
      const { v: _v, seq: _s, at: _a, server: _n, type: _t, ...info } = e;
      Object.assign(view, info);
      if (e.state === "ready") view.protocol_version = "2025-06-18";
      break;
    }
    case "tools":
      view.tools = [...e.names];
      view.tools_stale = e.stale;
      break;
    case "round_trip":
      view.last_round_trip_ms = e.round_trip_ms;
      view.last_round_trip_at = e.at;
      break;
    default:
      break;
  }
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A small seeded PRNG: the same seed, the same jitter, the same story. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
