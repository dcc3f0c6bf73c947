// The host seam: everything the dashboard asks of the backend goes through `Host`. Two
// implementations: the Tauri shell (tauri.ts, the only module that imports @tauri-apps/*)
// and an in-browser replay of events recorded from the real core (mock.ts) for development,
// tests and screenshots.

import type {
  AppInfo,
  AuthStatus,
  BundleExported,
  BundlePreview,
  CallOptions,
  ConfigView,
  DetectedClient,
  Event,
  ClientView,
  ConnectPreview,
  Connected,
  GenerationStderr,
  HistoryQuery,
  HostsView,
  ServerReview,
  Restored,
  ImportChoice,
  ImportOutcome,
  MaskedServerConfig,
  PastCall,
  PastEvent,
  PastFailure,
  ProfilesView,
  ResolvedCommand,
  SecretStoreView,
  ServerForm,
  ServerPolicy,
  ServerView,
  ToolDef,
  EndpointView,
  NewToken,
  TokenClient,
} from "./types";

export type * from "./types";
export { toCommandError } from "./errors";

export interface Host {
  /** "tauri" or "mock": shown in the header so a simulated dashboard is never mistaken for a real one. */
  readonly kind: "tauri" | "mock";
  /** Every configured server, now. */
  snapshot(): Promise<ServerView[]>;
  /**
   * Deliver events, in `seq` order, to `onEvent` until the returned function is called.
   * A host may first replay events it kept (the mock replays its whole log); the store
   * tolerates both a replay and a stream that starts mid-way.
   */
  subscribe(onEvent: (e: Event) => void): Promise<() => void>;
  /** Skip the wait; from gave_up or retired, start a fresh round. */
  reconnect(server: string): Promise<void>;
  /** Clear the attempt budget and the quarantine ladder (history is kept), then connect. */
  reset(server: string): Promise<void>;
  disable(server: string): Promise<void>;
  enable(server: string): Promise<void>;
  /** OAuth sign-in (docs/auth.md): opens the system browser at the server's authorization
   * server and resolves once the person finished (then the server reconnects), with the new
   * status; rejects when it fails or after 5 minutes. Rejects with kind `config` for a server
   * that does not sign in with OAuth (stdio, or HTTP with a static Authorization header). */
  signIn(server: string): Promise<AuthStatus>;
  /** Forgets the server's sign-in (revoked where the authorization server allows) and
   * reconnects, which then needs a new sign-in; whether there was one. */
  signOut(server: string): Promise<boolean>;
  /** Reconnect every server that is retrying, reconnecting, quarantined, gave_up or retired; returns their names. */
  reconnectAllFailed(): Promise<string[]>;
  /** One tool call on the server's current generation; never replayed. `opts.callId` names it for
   * `cancelCall`; `opts.onProgress` hears its `notifications/progress`. */
  callTool(server: string, tool: string, args: unknown, opts?: CallOptions): Promise<unknown>;
  /** The app's version, mode, paths and the notices to show once at start (demo mode, a broken config). */
  appInfo(): Promise<AppInfo>;
  /** Tells the shell the dashboard's first frame is on screen; the app logs the time since it
   * started (the benchmark's cold start to first paint, bench/METHOD.md). */
  painted(): Promise<void>;
  /** The full definitions of the server's current tools. */
  toolList(server: string): Promise<ToolDef[]>;
  /** Cancels the call named `callId` (the server is told; the call rejects with kind `cancelled`).
   * False when it is not in flight. */
  cancelCall(callId: string): Promise<boolean>;
  /** The stderr of the current and the previous generation (stdio; empty for HTTP). */
  serverStderr(server: string): Promise<GenerationStderr[]>;
  /** The resolved command of a stdio server; null for HTTP. */
  serverCommand(server: string): Promise<ResolvedCommand | null>;
  /** The server's config, read-only, every secret value masked. */
  serverConfig(server: string): Promise<MaskedServerConfig>;
  /** The reconnect policy and timeouts the server runs with. */
  serverPolicy(server: string): Promise<ServerPolicy>;
  /** The Hosts section: hosts attached through `lifeline connect`, their calls in flight, and
   * the last hour's calls by tool (kept across restarts). */
  serverHosts(server: string): Promise<HostsView>;
  /** What the tool pins hold of the server for review (docs/trust.md). */
  toolReview(server: string): Promise<ServerReview>;
  /** Approves or rejects `tools` of the server (every one waiting when null); the tools decided.
   * Every Lifeline process takes it in within a second, and the hosts are told. */
  toolDecide(server: string, decision: "approve" | "reject", tools: string[] | null): Promise<string[]>;
  /** "Connect a client": the AI clients on this machine with their servers (docs/clients.md). */
  clientsList(): Promise<ClientView[]>;
  /** The masked diff of routing `servers` of `client` through Lifeline; writes nothing. */
  clientsPreview(client: string, servers: string[]): Promise<ConnectPreview>;
  /** Imports, backs up and rewrites the client's file. */
  clientsConnect(client: string, servers: string[]): Promise<Connected>;
  /** Puts the backup back; rejects with kind `changed_since` when the client changed the file
   * since and `force` is false. */
  clientsRestore(client: string, force: boolean): Promise<Restored>;
  /** "Serve over HTTP": the local endpoint, on or off, its URL (docs/gateway.md). */
  gatewayEndpoint(): Promise<EndpointView>;
  /** Writes `lifeline.serve` to the config and applies it now (the listener restarts). */
  gatewaySet(enabled: boolean, port: number): Promise<EndpointView>;
  /** The clients with a token, by name (never a token). */
  gatewayTokens(): Promise<TokenClient[]>;
  /** Makes a token for `client` (replacing any): the only answer holding one; show it once. */
  gatewayTokenAdd(client: string): Promise<NewToken>;
  /** Removes the client's token; whether it had one. */
  gatewayTokenRemove(client: string): Promise<boolean>;
  /** The Profiles view (docs/config.md): each profile as a host Lifeline cannot identify would
   * be shown it on the one endpoint (its tools now, their names, the estimated tokens, the
   * limit passed), which clients use it, and the tools a switch cannot change. */
  profilesGet(): Promise<ProfilesView>;
  /** Turns one tool of a profile on or off in the config file (`lifeline.profiles.P.tools.
   * SERVER.exclude`, saved and applied); the view after. Rejects, writing nothing, where the
   * switch cannot do it (search mode, a glob). */
  profileToolSet(profile: string, server: string, tool: string, shown: boolean): Promise<ProfilesView>;
  /** Events of earlier runs, newest first (this run's arrive through `subscribe`). */
  historyEvents(query: HistoryQuery): Promise<PastEvent[]>;
  /** Failures of earlier runs, newest first. */
  historyFailures(query: HistoryQuery): Promise<PastFailure[]>;
  /** Tool calls of earlier runs, newest first. */
  historyCalls(query: HistoryQuery): Promise<PastCall[]>;
  /** Builds the diagnostic bundle (every secret removed) and returns every file with its exact content. */
  bundlePreview(): Promise<BundlePreview>;
  /** Writes the bundle last previewed to `path` (absolute); rejects naming the path and what to do. */
  bundleExport(path: string): Promise<BundleExported>;
  /** The platform's save dialog starting at `suggested`; null when cancelled. */
  chooseSavePath(suggested: string): Promise<string | null>;

  // ## The config (editing, import, live reload)

  /** The config file's servers as editor forms, every secret masked. */
  configGet(): Promise<ConfigView>;
  /** Rejects with a ConfigError naming the fields when the entry is refused. */
  serverAdd(server: ServerForm): Promise<void>;
  /** `name` as configured; `server.name` may rename it. `***` sent back keeps a stored secret. */
  serverEdit(name: string, server: ServerForm): Promise<void>;
  serverRemove(name: string): Promise<void>;
  /** Other clients' config files on this machine, their servers and what would conflict. */
  importDetect(): Promise<DetectedClient[]>;
  importApply(sources: ImportChoice[]): Promise<ImportOutcome>;
  /** Which store keeps secrets (the OS keychain, or a plain file with a notice). */
  secretStore(): Promise<SecretStoreView>;
  /** Stores `value` as the secret `name`, for a `${keyring:NAME}` reference; never returns it. */
  secretSet(name: string, value: string): Promise<SecretStoreView>;
  /** Called with the new AppInfo whenever the servers or notices changed (an edit, the file
   * changed on disk, the demo ended); re-read the snapshot then. Returns an unsubscribe. */
  onConfigChanged(listener: (info: AppInfo) => void): Promise<() => void>;
}

/** Whether this page runs inside the Tauri webview (its IPC bridge is injected before any script). */
export function inTauri(w: Window = window): boolean {
  return "__TAURI_INTERNALS__" in w;
}

/** The mock is used with `?mock` in the URL, and whenever the Tauri bridge is absent (a plain browser). */
export function wantsMock(w: Window = window): boolean {
  return new URLSearchParams(w.location.search).has("mock") || !inTauri(w);
}

/** Picks and loads the host; each implementation is its own chunk, so the shell never loads the mock's code. */
export async function connectHost(w: Window = window): Promise<Host> {
  if (wantsMock(w)) {
    const { MockHost, mockOptionsFromUrl } = await import("./mock");
    return new MockHost(mockOptionsFromUrl(new URL(w.location.href)));
  }
  const { tauriHost } = await import("./tauri");
  return tauriHost();
}
