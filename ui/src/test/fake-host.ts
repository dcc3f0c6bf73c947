// A host the test drives by hand: it hands out the views it is given and delivers the events
// the test pushes.

import { vi } from "vitest";
import type { Host } from "../host/index";
import type {
  AppInfo,
  CommandError,
  ConfigView,
  DetectedClient,
  Event,
  ImportChoice,
  ImportOutcome,
  ServerForm,
  ServerView,
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
  reconnectAllFailed = vi.fn(async (): Promise<string[]> => {
    this.maybeFail();
    return this.views.filter((v) => v.state !== "ready").map((v) => v.server);
  });
  callTool = vi.fn(async () => ({}));
  info: AppInfo = { version: "0.1.0", mode: "config", config_path: null, log_dir: null, notices: [] };
  appInfo = vi.fn(async (): Promise<AppInfo> => structuredClone(this.info));
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
