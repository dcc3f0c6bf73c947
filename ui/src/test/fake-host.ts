// A host the test drives by hand: it hands out the views it is given and delivers the events
// the test pushes.

import { vi } from "vitest";
import type { Host } from "../host/index";
import { mockBundle } from "../host/mock-bundle";
import { MockClients } from "../host/mock-clients";
import { MockServe } from "../host/mock-serve";
import { mockPolicy } from "../host/mock-detail";
import type {
  AppInfo,
  AuthStatus,
  BundleExported,
  BundlePreview,
  CallOptions,
  CommandError,
  ConfigView,
  DetectedClient,
  Event,
  GenerationStderr,
  ImportChoice,
  ImportOutcome,
  MaskedServerConfig,
  PastCall,
  PastEvent,
  PastFailure,
  ResolvedCommand,
  SecretStoreView,
  ServerForm,
  ServerPolicy,
  ServerView,
  ToolDef,
  HostsView,
  ClientView,
  ConnectPreview,
  Connected,
  Restored,
  EndpointView,
  NewToken,
  TokenClient,
} from "../host/types";

export class FakeHost implements Host {
  readonly kind = "mock" as const;
  views: ServerView[];
  /** Events delivered synchronously inside subscribe (a replayed backlog). */
  backlog: Event[] = [];
  failWith: CommandError | null = null;
  private listener: ((e: Event) => void) | null = null;

  snapshot = vi.fn(async (): Promise<ServerView[]> => structuredClone(this.views));
  reconnect = vi.fn(async (_server: string) => this.maybeFail());
  reset = vi.fn(async (_server: string) => this.maybeFail());
  disable = vi.fn(async (_server: string) => this.maybeFail());
  enable = vi.fn(async (_server: string) => this.maybeFail());
  /** What `signIn` resolves to; a test may hold it (`signInGate`) to see the pending state. */
  signedIn: AuthStatus = {
    signed_in: true,
    needs_sign_in: false,
    issuer: "https://auth.example.com",
    scopes: ["read"],
    expires_at: null,
    signed_in_at: null,
    last_refresh_at: null,
    last_refresh_ok: null,
  };
  signInGate: Promise<void> | null = null;
  signIn = vi.fn(async (_server: string): Promise<AuthStatus> => {
    if (this.signInGate) await this.signInGate;
    this.maybeFail();
    return structuredClone(this.signedIn);
  });
  signOut = vi.fn(async (_server: string): Promise<boolean> => {
    this.maybeFail();
    return true;
  });
  reconnectAllFailed = vi.fn(async (): Promise<string[]> => {
    this.maybeFail();
    return this.views.filter((v) => v.state !== "ready").map((v) => v.server);
  });
  callTool = vi.fn(async (_server: string, _tool: string, _args: unknown, _opts?: CallOptions): Promise<unknown> => ({}));
  info: AppInfo = { version: "0.1.0", mode: "config", config_path: null, log_dir: null, notices: [] };
  appInfo = vi.fn(async (): Promise<AppInfo> => structuredClone(this.info));
  painted = vi.fn(async (): Promise<void> => {});
  tools: ToolDef[] = [];
  toolList = vi.fn(async (_server: string): Promise<ToolDef[]> => structuredClone(this.tools));
  cancelCall = vi.fn(async (_callId: string): Promise<boolean> => false);
  stderr: GenerationStderr[] = [];
  serverStderr = vi.fn(async (_server: string): Promise<GenerationStderr[]> => structuredClone(this.stderr));
  command: ResolvedCommand | null = null;
  serverCommand = vi.fn(async (_server: string): Promise<ResolvedCommand | null> => structuredClone(this.command));
  maskedConfig: MaskedServerConfig = {};
  policy: ServerPolicy = mockPolicy();
  serverPolicy = vi.fn(async (_server: string): Promise<ServerPolicy> => structuredClone(this.policy));
  serverConfig = vi.fn(async (_server: string): Promise<MaskedServerConfig> => structuredClone(this.maskedConfig));
  hostsView: HostsView = { hosts: [], live_calls: 0, tools: [] };
  /** "Connect a client": the mock host's simulated client files. */
  mockClients = new MockClients();
  clientsList = vi.fn(async (): Promise<ClientView[]> => this.mockClients.list());
  clientsPreview = vi.fn(async (c: string, s: string[]): Promise<ConnectPreview> => this.mockClients.preview(c, s));
  clientsConnect = vi.fn(async (c: string, s: string[]): Promise<Connected> => this.mockClients.connect(c, s));
  clientsRestore = vi.fn(async (c: string, force: boolean): Promise<Restored> => this.mockClients.restore(c, force));
  readonly mockServe = new MockServe();
  gatewayEndpoint = vi.fn(async (): Promise<EndpointView> => this.mockServe.endpoint());
  gatewaySet = vi.fn(async (enabled: boolean, port: number): Promise<EndpointView> => this.mockServe.set(enabled, port));
  gatewayTokens = vi.fn(async (): Promise<TokenClient[]> => this.mockServe.tokens());
  gatewayTokenAdd = vi.fn(async (client: string): Promise<NewToken> => this.mockServe.add(client));
  gatewayTokenRemove = vi.fn(async (client: string): Promise<boolean> => this.mockServe.remove(client));
  serverHosts = vi.fn(async (_server: string): Promise<HostsView> => structuredClone(this.hostsView));
  /** Earlier runs' rows, newest first, returned whatever the query. */
  pastEvents: PastEvent[] = [];
  pastFailures: PastFailure[] = [];
  pastCalls: PastCall[] = [];
  historyEvents = vi.fn(async (): Promise<PastEvent[]> => structuredClone(this.pastEvents));
  historyFailures = vi.fn(async (): Promise<PastFailure[]> => structuredClone(this.pastFailures));
  historyCalls = vi.fn(async (): Promise<PastCall[]> => structuredClone(this.pastCalls));
  bundlePreview = vi.fn(async (): Promise<BundlePreview> => mockBundle(this.views, this.backlog, 0));
  chosenPath: string | null = "/home/ada/Downloads/chosen.zip";
  chooseSavePath = vi.fn(async (_suggested: string): Promise<string | null> => this.chosenPath);
  bundleExport = vi.fn(async (path: string): Promise<BundleExported> => {
    this.maybeFail();
    return { path, bytes: 1234 };
  });
  config: ConfigView = { path: null, mode: "config", servers: [], problem: null };
  configGet = vi.fn(async (): Promise<ConfigView> => structuredClone(this.config));
  serverAdd = vi.fn(async (_server: ServerForm) => this.maybeFail());
  serverEdit = vi.fn(async (_name: string, _server: ServerForm) => this.maybeFail());
  serverRemove = vi.fn(async (_name: string) => this.maybeFail());
  detected: DetectedClient[] = [];
  importDetect = vi.fn(async (): Promise<DetectedClient[]> => structuredClone(this.detected));
  importApply = vi.fn(async (_sources: ImportChoice[]): Promise<ImportOutcome> => {
    this.maybeFail();
    return { added: [], conflicts: [], skipped: [], disabled: [] };
  });
  store: SecretStoreView = {
    backend: { kind: "keychain", name: "Secret Service", path: null, reason: "the OS keychain" },
    notice: null,
  };
  secretStore = vi.fn(async (): Promise<SecretStoreView> => structuredClone(this.store));
  secretSet = vi.fn(async (_name: string, _value: string): Promise<SecretStoreView> => {
    this.maybeFail();
    return structuredClone(this.store);
  });
  private configListener: ((info: AppInfo) => void) | null = null;
  onConfigChanged = vi.fn(async (listener: (info: AppInfo) => void) => {
    this.configListener = listener;
    return () => {
      this.configListener = null;
    };
  });

  /** What the shell's `config_changed` event would deliver. */
  configChanged(info: AppInfo): void {
    this.info = info;
    this.configListener?.(structuredClone(info));
  }

  constructor(views: ServerView[]) {
    this.views = views;
  }

  async subscribe(onEvent: (e: Event) => void): Promise<() => void> {
    for (const e of this.backlog) onEvent(e);
    this.listener = onEvent;
    return () => {
      this.listener = null;
    };
  }

  push(...events: Event[]): void {
    for (const e of events) this.listener?.(e);
  }

  private maybeFail(): void {
    if (this.failWith) throw this.failWith;
  }
}
