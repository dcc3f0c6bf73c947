// An in-browser host that replays what the real core did: the events lifeline-core's
// supervisors published against lifeline-fixture processes (recorded/scenario.json, read by
// mock-replay.ts) and the shell's answers to config edits (recorded/config.json, read by
// mock-config.ts); `make recording` re-records both. The page load is the recording's "now":
// the past is played at once (and replayed to every subscriber), the future on the clock. A
// command replays what that command did to the same server in the recording; a server added
// in the editor replays a recorded healthy (or disabled) one. Nothing here decides a state,
// masks or validates. Hosts come from the recorded host events (mock-hosts.ts); sign-in is
// written, not recorded (mock-auth.ts); tool calls, history and the bundle are thin stand-ins
// (mock-detail.ts, mock-history.ts, mock-bundle.ts); the dialogs that no server drives are
// mock-dialogs.ts (clients, the HTTP endpoint, the Profiles view replayed from
// recorded/profiles.json). Options, clock and app info: mock-options.ts; tests inject a manual
// clock.

import type { Host } from "./index";
import { mockBundle } from "./mock-bundle";
import { MockDialogs } from "./mock-dialogs";
import { type MockHistory, mockHistory, queryRows } from "./mock-history";
import type {
  AppInfo,
  CallOptions,
  BundleExported,
  BundlePreview,
  CommandError,
  ConfigView,
  DetectedClient,
  AuthStatus,
  Event,
  GenerationStderr,
  MaskedServerConfig,
  ResolvedCommand,
  HistoryQuery,
  PastCall,
  PastEvent,
  PastFailure,
  ServerPolicy,
  ServerView,
  StateName,
  ToolDef,
  ImportChoice,
  ImportOutcome,
  SecretStoreView,
  ServerForm,
  HostsView,
  ServerReview,
} from "./types";
import { cancelledFailure, mockBehaviour, playProgress, mockCommand, mockConfig, mockPolicy } from "./mock-detail";
import * as auth from "./mock-auth";
import { hostsView } from "./mock-hosts";
import { failIfAsked, type MockClock, type MockOptions, mockAppInfo, systemClock } from "./mock-options";
import {
  type Command,
  type RecordedEvent,
  type Row,
  addedRow,
  applyToView,
  branchOf,
  rows,
  stderrOf,
  storyOf,
  toWire,
  toolsOf,
} from "./mock-replay";
import { detect, edited, entryOf, importChoices, shown, type Stored } from "./mock-config";
import { initialView, notSignedIn } from "./mock-wire";
import { MockTrust } from "./mock-trust";

export { type MockClock, type MockOptions, mockAppInfo, mockOptionsFromUrl, systemClock } from "./mock-options";

export type { MockCall } from "./mock-dialogs";

const FAILED: ReadonlySet<StateName> = new Set(["quarantined", "gave_up", "retired"]);

const CANCELLED = "the call was cancelled; the server was sent notifications/cancelled";

/** A mock call's round trip: the calls are stand-ins, not recorded. */
const CALL_RTT_MS = 2;

/** One row: the recorded server it replays, what the dashboard sees, what is still to play. */
interface Replay {
  row: Row;
  view: ServerView;
  /** Recorded events not yet played, in order, `at` relative to `t0`. */
  pending: RecordedEvent[];
}

export class MockHost extends MockDialogs implements Host {
  readonly kind = "mock" as const;
  /** The page load: the recording's "now". */
  readonly t0: number;

  private readonly clock: MockClock;
  private readonly replays = new Map<string, Replay>();
  private readonly log: Event[] = [];
  private readonly listeners = new Set<(e: Event) => void>();
  private readonly failing: Set<string>;
  private notices: readonly string[];
  private readonly history: MockHistory;
  private previewed: BundlePreview | null = null;
  private seq = 0;
  private armed: { at: number; handle: unknown } | null = null;
  /** Calls in flight that a `callId` named, by that name: their cancel. */
  private readonly running = new Map<string, () => void>();
  /** The tool pins' review, replayed (mock-trust.ts). */
  private readonly trust = new MockTrust();

  constructor(opts: MockOptions = {}) {
    super();
    this.clock = opts.clock ?? systemClock;
    this.failing = new Set(opts.fail ?? []);
    this.notices = opts.notices ?? [];
    this.history = opts.history ? mockHistory(this.clock.now()) : { events: [], failures: [], calls: [] };
    this.t0 = this.clock.now();
    const story = rows(opts.servers ?? 4);
    for (const row of story) this.add(row);
    this.stored = this.demo ? [] : story.map((row) => entryOf(row.name, row.source));
    for (const name of opts.signIn ?? []) {
      const r = this.replays.get(name);
      if (r?.view.auth) r.pending = auth.signInNeededStory(r.view, -120_000);
    }
    this.pump();
  }

  // ## Host

  async snapshot(): Promise<ServerView[]> {
    this.pump();
    return [...this.replays.values()].map((r) => structuredClone(r.view));
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
    return this.command("reconnect", server);
  }

  reset(server: string): Promise<void> {
    return this.command("reset", server);
  }

  disable(server: string): Promise<void> {
    return this.command("disable", server);
  }

  enable(server: string): Promise<void> {
    return this.command("enable", server);
  }

  /** A person "in the browser" for auth.BROWSER_MS, then signed in; the server then
   * replays a healthy HTTP server's reset (mock-auth.ts). */
  async signIn(server: string): Promise<AuthStatus> {
    const r = this.authCommand("auth_sign_in", server);
    await new Promise((resolve) => this.clock.setTimeout(() => resolve(null), auth.BROWSER_MS));
    this.pump();
    if (this.replays.get(server) !== r) throw auth.replaced(server);
    const status = auth.signedIn(r.row.name, r.view.auth!, this.clock.now());
    this.emitNow(r, { type: "auth", change: "signed_in", auth: status, failure: null });
    r.row = { ...r.row, source: auth.SIGNED_IN_SOURCE };
    r.pending = auth.renumbered(branchOf(r.row, "reset", this.clock.now() - this.t0), r.view);
    this.pump();
    return structuredClone(status);
  }

  /** Signed out, then the attempt that finds no token: retired, reason `sign_in`. */
  async signOut(server: string): Promise<boolean> {
    const r = this.authCommand("auth_sign_out", server);
    const had = r.view.auth!.signed_in;
    const status = { ...notSignedIn(), issuer: r.view.auth!.issuer };
    this.emitNow(r, { type: "auth", change: "signed_out", auth: status, failure: null });
    r.pending = auth.signInNeededStory(r.view, this.clock.now() - this.t0);
    this.pump();
    return had;
  }

  private authCommand(command: string, server: string): Replay {
    this.pump();
    this.calls.push({ command, server });
    this.maybeFail(command);
    const r = this.replay(server);
    if (!r.view.auth) throw auth.NO_SIGN_IN;
    return r;
  }

  async reconnectAllFailed(): Promise<string[]> {
    this.pump();
    this.calls.push({ command: "reconnect_all_failed" });
    this.maybeFail("reconnect_all_failed");
    const failed = [...this.replays.values()]
      .filter((r) => r.view.state !== null && FAILED.has(r.view.state))
      .map((r) => r.row.name);
    for (const name of failed) await this.reconnect(name);
    return failed;
  }

  async callTool(server: string, tool: string, args: unknown, opts: CallOptions = {}): Promise<unknown> {
    this.pump();
    this.calls.push({ command: "call_tool", server, tool });
    this.maybeFail("call_tool");
    const r = this.replay(server);
    if (r.view.state !== "ready") {
      throw {
        kind: "not_ready",
        message: `\`${server}\` is ${r.view.state ?? "starting"}; the call was not sent`,
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
    const ms = CALL_RTT_MS + plan.steps * plan.stepMs;
    if (plan.steps > 0) {
      await playProgress(this.clock, this.running, plan.steps, plan.stepMs, opts, (ms) => {
        const failure = cancelledFailure(r.view.generation, CANCELLED);
        this.emitNow(r, { type: "call", tool, outcome: "error", duration_ms: ms, error: failure });
        return { kind: "cancelled", message: CANCELLED } satisfies CommandError;
      });
    }
    const outcome = plan.result.isError ? "tool_error" : "ok";
    this.emitNow(r, { type: "call", tool, outcome, duration_ms: ms, error: null });
    this.emitNow(r, { type: "round_trip", round_trip_ms: ms });
    return structuredClone(plan.result);
  }

  /** The recorded definitions of the tools the server has now. */
  async toolList(server: string): Promise<ToolDef[]> {
    this.pump();
    this.calls.push({ command: "tool_list", server });
    const r = this.replay(server);
    const names = new Set(r.view.tools);
    return toolsOf(r.row).filter((t) => names.has(t.name));
  }

  async cancelCall(callId: string): Promise<boolean> {
    this.calls.push({ command: "cancel_call" });
    const cancel = this.running.get(callId);
    cancel?.();
    return cancel !== undefined;
  }

  /** The recorded stderr of the server's last two generations (none before its first). */
  async serverStderr(server: string): Promise<GenerationStderr[]> {
    this.pump();
    const r = this.replay(server);
    return r.view.generation === 0 || r.row.transport !== "stdio" ? [] : stderrOf(r.row);
  }

  async serverCommand(server: string): Promise<ResolvedCommand | null> {
    return mockCommand(server, this.replay(server).row.transport);
  }

  async serverPolicy(server: string): Promise<ServerPolicy> {
    this.replay(server);
    return mockPolicy();
  }

  /** Derived from the host events played so far (mock-hosts.ts), as the app keeps them. */
  async serverHosts(server: string): Promise<HostsView> {
    this.pump();
    this.replay(server);
    return hostsView(this.log, server, this.clock.now());
  }

  async toolReview(server: string): Promise<ServerReview> {
    this.pump();
    this.calls.push({ command: "tool_review", server });
    this.replay(server);
    return this.trust.review(server);
  }

  /** The recorded decision; then what the core tells: approved or rejected held tools, and
   * the list with what is shown now. */
  async toolDecide(server: string, decision: "approve" | "reject", tools: string[] | null): Promise<string[]> {
    this.pump();
    this.calls.push({ command: "tool_decide", server });
    this.maybeFail("tool_decide");
    const r = this.replay(server);
    const before = new Set(this.trust.review(server).held.map((h) => h.tool));
    const decided = this.trust.decide(server, decision, tools);
    const held = decided.filter((t) => before.has(t));
    if (held.length > 0) {
      const type = decision === "approve" ? "tool_approved" : "tool_rejected";
      this.emitNow(r, { type, tools: held, count: held.length });
    }
    const names = toolsOf(r.row)
      .map((t) => t.name)
      .filter((n) => r.view.tools.includes(n) || before.has(n));
    const v = r.view;
    this.emitNow(r, { type: "tools", count: names.length, stale: v.tools_stale, names, held: 0, new: 0 });
    return decided;
  }

  async serverConfig(server: string): Promise<MaskedServerConfig> {
    const r = this.replay(server);
    return mockConfig(server, r.row.transport, r.view.state === "disabled");
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
    const views = [...this.replays.values()].map((r) => r.view);
    this.previewed = await mockBundle(views, this.log, this.clock.now());
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

  // ## The config (mock-config.ts): edits start, replace and stop replayed servers

  /** The file's servers with their secrets (the story's rows as recorded; none in the demo). */
  private stored: Stored[] = [];
  private readonly configListeners = new Set<(info: AppInfo) => void>();

  private get demo(): boolean {
    return mockAppInfo(this.notices).mode === "demo";
  }

  private readonly configured = (name: string) => this.stored.some((f) => f.name === name);

  /** Where the server `name` is in the file; unknown names are refused as the shell does. */
  private position(name: string): number {
    const i = this.stored.findIndex((f) => f.name === name);
    if (i < 0) throw { kind: "unknown_server", message: `there is no server named \`${name}\`` } satisfies CommandError;
    return i;
  }

  async configGet(): Promise<ConfigView> {
    const info = mockAppInfo(this.notices);
    return { path: info.config_path, mode: info.mode, servers: this.stored.map(shown), problem: null };
  }

  async serverAdd(server: ServerForm): Promise<void> {
    this.pump();
    this.calls.push({ command: "server_add", server: server.name });
    this.maybeFail("server_add");
    const saved = edited(this.stored, null, server);
    this.leaveDemo();
    this.stored.push(saved);
    this.startServer(saved);
    this.configChanged();
  }

  async serverEdit(name: string, server: ServerForm): Promise<void> {
    this.pump();
    this.calls.push({ command: "server_edit", server: name });
    this.maybeFail("server_edit");
    const i = this.position(name);
    this.stored[i] = edited(this.stored, name, server);
    const saved = this.stored[i]!;
    this.stopServer(name);
    this.startServer(saved);
    this.configChanged();
  }

  async serverRemove(name: string): Promise<void> {
    this.pump();
    this.calls.push({ command: "server_remove", server: name });
    this.maybeFail("server_remove");
    this.stored.splice(this.position(name), 1);
    this.stopServer(name);
    this.configChanged();
  }

  async importDetect(): Promise<DetectedClient[]> {
    return detect(this.configured);
  }

  async importApply(sources: ImportChoice[]): Promise<ImportOutcome> {
    this.pump();
    this.calls.push({ command: "import_apply" });
    this.maybeFail("import_apply");
    const { stored, outcome } = importChoices(sources, this.configured);
    if (stored.length > 0) {
      this.leaveDemo();
      for (const s of stored) {
        this.stored.push(s);
        this.startServer(s);
      }
      this.configChanged();
    }
    return outcome;
  }

  /** The mock's keychain: names only matter (values are dropped: a mock keeps no secret). */
  readonly secretNames = new Set<string>();

  async secretStore(): Promise<SecretStoreView> {
    return { backend: { kind: "keychain", name: "Secret Service", path: null, reason: "the OS keychain" }, notice: null };
  }

  async secretSet(name: string, _value: string): Promise<SecretStoreView> {
    this.calls.push({ command: "secret_set", server: name });
    this.maybeFail("secret_set");
    this.secretNames.add(name);
    return this.secretStore();
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
    for (const name of [...this.replays.keys()]) this.stopServer(name);
    this.notices = this.notices.filter((k) => k === "config");
    this.stored = [];
  }

  /** A new server for `f`: a recorded healthy (or disabled) one from now, in the file's order. */
  private startServer(s: Stored): void {
    const f = shown(s);
    const row = addedRow(f.name, f.transport, f.disabled, this.clock.now() - this.t0);
    this.add(row);
    const order = this.stored.map((c) => c.name);
    const sorted = [...this.replays.entries()].sort(([a], [b]) => order.indexOf(a) - order.indexOf(b));
    this.replays.clear();
    for (const [name, r] of sorted) this.replays.set(name, r);
    this.pump();
  }

  /** Stops and forgets a server: what it had still to play, its row. */
  private stopServer(name: string): void {
    this.replays.delete(name);
    this.arm();
  }

  private configChanged(): void {
    const info = mockAppInfo(this.notices);
    for (const listener of this.configListeners) listener(structuredClone(info));
  }

  // ## Test hooks

  /** Plays every recorded event that is due by the clock's now (the manual clock's
   * `advance` calls this through its timers), in time order across the servers. */
  pump(): void {
    const now = this.clock.now() - this.t0;
    for (;;) {
      let next: Replay | null = null;
      for (const r of this.replays.values()) {
        const e = r.pending[0];
        if (e && e.at <= now && (!next || e.at < next.pending[0]!.at)) next = r;
      }
      if (!next) break;
      this.emit(next, next.pending.shift()!);
    }
    this.arm();
  }

  /** Every event emitted so far (the replay a new subscriber gets). */
  events(): readonly Event[] {
    return this.log;
  }

  // ## Plumbing

  private add(row: Row): void {
    const view = { ...initialView(row.name, row.transport), auth: auth.authOf(row) };
    this.trust.overlay(view);
    this.replays.set(row.name, { row, view, pending: storyOf(row) });
  }

  private replay(server: string): Replay {
    const r = this.replays.get(server);
    if (!r) throw { kind: "unknown_server", message: `no server named \`${server}\`` } satisfies CommandError;
    return r;
  }

  private maybeFail(command: string): void {
    failIfAsked(this.failing, command);
  }

  /** What the core did with `command` in the recording replaces the rest of the server's
   * story, from now. The branch was recorded from the state at the page load, whatever the
   * state now (ui/README.md). Enable only acts on a disabled server, disable only on one
   * that is not. */
  private async command(command: Command, server: string): Promise<void> {
    this.pump();
    this.calls.push({ command, server });
    this.maybeFail(command);
    const r = this.replay(server);
    const disabled = r.view.state === "disabled";
    if ((command === "enable") !== disabled) return;
    r.pending = branchOf(r.row, command, this.clock.now() - this.t0);
    this.pump();
  }

  private emit(r: Replay, recorded: RecordedEvent): void {
    const e = toWire(recorded, ++this.seq, this.t0);
    applyToView(r.view, e);
    // The review decides what the list shows (mock-trust.ts); the event says the same.
    this.trust.overlay(r.view);
    if (e.type === "tools") {
      e.names = [...r.view.tools];
      e.count = r.view.tools.length;
      e.held = r.view.tools_held;
      e.new = r.view.tools_new;
    }
    this.log.push(e);
    for (const l of this.listeners) l(structuredClone(e));
  }

  /** An event of a mock tool call, now. */
  private emitNow(r: Replay, body: Record<string, unknown> & { type: string }): void {
    const at = this.clock.now() - this.t0;
    this.emit(r, { ...body, v: 1, at, server: r.row.name, generation: r.view.generation });
  }

  /** One timer, at the next recorded event still to play. */
  private arm(): void {
    let at = Infinity;
    for (const r of this.replays.values()) at = Math.min(at, r.pending[0]?.at ?? Infinity);
    const due = this.t0 + at;
    if (this.armed && this.armed.at !== due) {
      this.clock.clearTimeout(this.armed.handle);
      this.armed = null;
    }
    if (at === Infinity || this.armed) return;
    const handle = this.clock.setTimeout(
      () => {
        this.armed = null;
        this.pump();
      },
      Math.max(0, due - this.clock.now()),
    );
    this.armed = { at: due, handle };
  }
}

