// A host the test drives by hand: it hands out the views it is given and delivers the events
// the test pushes.

import { vi } from "vitest";
import type { Host } from "../host/index";
import { mockBundle } from "../host/mock-bundle";
import { MockClients } from "../host/mock-clients";
import { MockTrust } from "../host/mock-trust";
import { MockProfiles } from "../host/mock-profiles";
import { MockServe } from "../host/mock-serve";
import { mockPolicy } from "../host/mock-detail";
import type { AppInfo, CommandError, Event, ServerView } from "../host/types";
import { appInfo, authStatus } from "./fixtures";

/** What the host's method `K` resolves with: the type of the fake's canned answer to it. */
type Answer<K extends keyof Host> = Host[K] extends (...args: never[]) => Promise<infer R> ? R : never;

export class FakeHost implements Host {
  readonly kind = "mock" as const;
  views: ServerView[];
  /** Events delivered synchronously inside subscribe (a replayed backlog). */
  backlog: Event[] = [];
  failWith: CommandError | null = null;
  private listener: ((e: Event) => void) | null = null;

  snapshot = vi.fn<Host["snapshot"]>(async () => structuredClone(this.views));
  reconnect = vi.fn<Host["reconnect"]>(async () => this.maybeFail());
  reset = vi.fn<Host["reset"]>(async () => this.maybeFail());
  disable = vi.fn<Host["disable"]>(async () => this.maybeFail());
  enable = vi.fn<Host["enable"]>(async () => this.maybeFail());
  /** What `signIn` resolves to; a test may hold it (`signInGate`) to see the pending state. */
  signedIn: Answer<"signIn"> = authStatus({ signed_in: true, scopes: ["read"] });
  signInGate: Promise<void> | null = null;
  signIn = vi.fn<Host["signIn"]>(async () => {
    if (this.signInGate) await this.signInGate;
    this.maybeFail();
    return structuredClone(this.signedIn);
  });
  signOut = vi.fn<Host["signOut"]>(async () => {
    this.maybeFail();
    return true;
  });
  reconnectAllFailed = vi.fn<Host["reconnectAllFailed"]>(async () => {
    this.maybeFail();
    return this.views.filter((v) => v.state !== "ready").map((v) => v.server);
  });
  callTool = vi.fn<Host["callTool"]>(async () => ({}));
  info: Answer<"appInfo"> = appInfo();
  appInfo = vi.fn<Host["appInfo"]>(async () => structuredClone(this.info));
  painted = vi.fn<Host["painted"]>(async () => {});
  tools: Answer<"toolList"> = [];
  toolList = vi.fn<Host["toolList"]>(async () => structuredClone(this.tools));
  cancelCall = vi.fn<Host["cancelCall"]>(async () => false);
  stderr: Answer<"serverStderr"> = [];
  serverStderr = vi.fn<Host["serverStderr"]>(async () => structuredClone(this.stderr));
  command: Answer<"serverCommand"> = null;
  serverCommand = vi.fn<Host["serverCommand"]>(async () => structuredClone(this.command));
  maskedConfig: Answer<"serverConfig"> = {};
  policy: Answer<"serverPolicy"> = mockPolicy();
  serverPolicy = vi.fn<Host["serverPolicy"]>(async () => structuredClone(this.policy));
  serverConfig = vi.fn<Host["serverConfig"]>(async () => structuredClone(this.maskedConfig));
  hostsView: Answer<"serverHosts"> = { hosts: [], live_calls: 0, tools: [] };
  /** "Connect a client": the mock host's simulated client files. */
  mockClients = new MockClients();
  clientsList = vi.fn<Host["clientsList"]>(async () => this.mockClients.list());
  clientsPreview = vi.fn<Host["clientsPreview"]>(async (c, s) => this.mockClients.preview(c, s));
  clientsConnect = vi.fn<Host["clientsConnect"]>(async (c, s) => this.mockClients.connect(c, s));
  clientsRestore = vi.fn<Host["clientsRestore"]>(async (c, force) => this.mockClients.restore(c, force));
  readonly mockServe = new MockServe();
  gatewayEndpoint = vi.fn<Host["gatewayEndpoint"]>(async () => this.mockServe.endpoint());
  gatewaySet = vi.fn<Host["gatewaySet"]>(async (enabled, port) => this.mockServe.set(enabled, port));
  gatewayTokens = vi.fn<Host["gatewayTokens"]>(async () => this.mockServe.tokens());
  gatewayTokenAdd = vi.fn<Host["gatewayTokenAdd"]>(async (client) => this.mockServe.add(client));
  gatewayTokenRemove = vi.fn<Host["gatewayTokenRemove"]>(async (client) => this.mockServe.remove(client));
  serverHosts = vi.fn<Host["serverHosts"]>(async () => structuredClone(this.hostsView));
  /** The tool pins' review: the mock host's, replayed from the shell's recording. */
  readonly mockTrust = new MockTrust();
  toolReview = vi.fn<Host["toolReview"]>(async (server) => this.mockTrust.review(server));
  toolDecide = vi.fn<Host["toolDecide"]>(async (server, d, tools) => this.mockTrust.decide(server, d, tools));
  /** The Profiles view: the mock host's, replayed from the shell's recording. */
  readonly mockProfiles = new MockProfiles();
  profilesGet = vi.fn<Host["profilesGet"]>(async () => this.mockProfiles.view());
  profileToolSet = vi.fn<Host["profileToolSet"]>(async (p, s, t, shown) => this.mockProfiles.set(p, s, t, shown));
  /** Earlier runs' rows, newest first, returned whatever the query. */
  pastEvents: Answer<"historyEvents"> = [];
  pastFailures: Answer<"historyFailures"> = [];
  pastCalls: Answer<"historyCalls"> = [];
  historyEvents = vi.fn<Host["historyEvents"]>(async () => structuredClone(this.pastEvents));
  historyFailures = vi.fn<Host["historyFailures"]>(async () => structuredClone(this.pastFailures));
  historyCalls = vi.fn<Host["historyCalls"]>(async () => structuredClone(this.pastCalls));
  bundlePreview = vi.fn<Host["bundlePreview"]>(async () => mockBundle(this.views, this.backlog, 0));
  chosenPath: Answer<"chooseSavePath"> = "/home/ada/Downloads/chosen.zip";
  chooseSavePath = vi.fn<Host["chooseSavePath"]>(async () => this.chosenPath);
  bundleExport = vi.fn<Host["bundleExport"]>(async (path) => {
    this.maybeFail();
    return { path, bytes: 1234 };
  });
  config: Answer<"configGet"> = { path: null, mode: "config", servers: [], problem: null };
  configGet = vi.fn<Host["configGet"]>(async () => structuredClone(this.config));
  serverAdd = vi.fn<Host["serverAdd"]>(async () => this.maybeFail());
  serverEdit = vi.fn<Host["serverEdit"]>(async () => this.maybeFail());
  serverRemove = vi.fn<Host["serverRemove"]>(async () => this.maybeFail());
  detected: Answer<"importDetect"> = [];
  importDetect = vi.fn<Host["importDetect"]>(async () => structuredClone(this.detected));
  importApply = vi.fn<Host["importApply"]>(async () => {
    this.maybeFail();
    return { added: [], conflicts: [], skipped: [], disabled: [] };
  });
  store: Answer<"secretStore"> = {
    backend: { kind: "keychain", name: "Secret Service", path: null, reason: "the OS keychain" },
    notice: null,
  };
  secretStore = vi.fn<Host["secretStore"]>(async () => structuredClone(this.store));
  secretSet = vi.fn<Host["secretSet"]>(async () => {
    this.maybeFail();
    return structuredClone(this.store);
  });
  private configListener: ((info: AppInfo) => void) | null = null;
  onConfigChanged = vi.fn<Host["onConfigChanged"]>(async (listener) => {
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
