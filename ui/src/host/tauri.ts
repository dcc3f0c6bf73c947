// The Tauri shell's host: commands over `invoke`, events over one `Channel`. The only module
// (with the @tauri-apps/api it imports) that knows the UI runs in a webview. Command names and
// argument keys are the shell's contract; see ui/README.md.

import { Channel, invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import { toCommandError } from "./errors";
import type { Host } from "./index";
import type {
  AppInfo,
  AuthStatus,
  BundleExported,
  BundlePreview,
  CallOptions,
  CallProgress,
  ConfigView,
  DetectedClient,
  Event,
  GenerationStderr,
  HistoryQuery,
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
} from "./types";

/** Rejections become `CommandError` (`{kind, message}`) whatever the shell or IPC threw. */
async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (e) {
    throw toCommandError(e);
  }
}

export class TauriHost implements Host {
  readonly kind = "tauri" as const;

  snapshot(): Promise<ServerView[]> {
    return call<ServerView[]>("snapshot");
  }

  async subscribe(onEvent: (e: Event) => void): Promise<() => void> {
    let open = true;
    // Channel delivers in the order the shell sent, even if IPC messages arrive out of order.
    const channel = new Channel<Event>((e) => {
      if (open) onEvent(e);
    });
    await call<unknown>("subscribe", { channel });
    // The shell stops forwarding when a send fails (the page went away); here we only go quiet.
    return () => {
      open = false;
      channel.onmessage = () => {};
    };
  }

  reconnect(server: string): Promise<void> {
    return call<void>("reconnect", { server });
  }

  reset(server: string): Promise<void> {
    return call<void>("reset", { server });
  }

  signIn(server: string): Promise<AuthStatus> {
    return call<AuthStatus>("auth_sign_in", { server });
  }

  signOut(server: string): Promise<boolean> {
    return call<boolean>("auth_sign_out", { server });
  }

  disable(server: string): Promise<void> {
    return call<void>("disable", { server });
  }

  enable(server: string): Promise<void> {
    return call<void>("enable", { server });
  }

  reconnectAllFailed(): Promise<string[]> {
    return call<string[]>("reconnect_all_failed");
  }

  callTool(server: string, tool: string, args: unknown, opts: CallOptions = {}): Promise<unknown> {
    const onProgress = opts.onProgress;
    const progress = onProgress ? new Channel<CallProgress>((p) => onProgress(p)) : undefined;
    return call<unknown>("call_tool", { server, tool, args, callId: opts.callId, progress });
  }

  appInfo(): Promise<AppInfo> {
    return call<AppInfo>("app_info");
  }

  painted(): Promise<void> {
    return call<void>("ui_painted");
  }

  toolList(server: string): Promise<ToolDef[]> {
    return call<ToolDef[]>("tool_list", { server });
  }

  cancelCall(callId: string): Promise<boolean> {
    return call<boolean>("cancel_call", { callId });
  }

  serverStderr(server: string): Promise<GenerationStderr[]> {
    return call<GenerationStderr[]>("server_stderr", { server });
  }

  serverCommand(server: string): Promise<ResolvedCommand | null> {
    return call<ResolvedCommand | null>("server_command", { server });
  }

  serverPolicy(server: string): Promise<ServerPolicy> {
    return call<ServerPolicy>("server_policy", { server });
  }

  serverHosts(server: string): Promise<HostsView> {
    return call<HostsView>("server_hosts", { server });
  }

  clientsList(): Promise<ClientView[]> {
    return call<ClientView[]>("clients_list", {});
  }

  clientsPreview(client: string, servers: string[]): Promise<ConnectPreview> {
    return call<ConnectPreview>("clients_preview", { client, servers });
  }

  clientsConnect(client: string, servers: string[]): Promise<Connected> {
    return call<Connected>("clients_connect", { client, servers });
  }

  clientsRestore(client: string, force: boolean): Promise<Restored> {
    return call<Restored>("clients_restore", { client, force });
  }

  gatewayEndpoint(): Promise<EndpointView> {
    return call<EndpointView>("gateway_endpoint", {});
  }

  gatewaySet(enabled: boolean, port: number): Promise<EndpointView> {
    return call<EndpointView>("gateway_set", { enabled, port });
  }

  gatewayTokens(): Promise<TokenClient[]> {
    return call<TokenClient[]>("gateway_tokens", {});
  }

  gatewayTokenAdd(client: string): Promise<NewToken> {
    return call<NewToken>("gateway_token_add", { client });
  }

  gatewayTokenRemove(client: string): Promise<boolean> {
    return call<boolean>("gateway_token_remove", { client });
  }

  serverConfig(server: string): Promise<MaskedServerConfig> {
    return call<MaskedServerConfig>("server_config", { server });
  }

  historyEvents(query: HistoryQuery): Promise<PastEvent[]> {
    return call<PastEvent[]>("history_events", { ...query });
  }

  historyFailures(query: HistoryQuery): Promise<PastFailure[]> {
    return call<PastFailure[]>("history_failures", { ...query });
  }

  historyCalls(query: HistoryQuery): Promise<PastCall[]> {
    return call<PastCall[]>("history_calls", { ...query });
  }

  bundlePreview(): Promise<BundlePreview> {
    return call<BundlePreview>("bundle_preview");
  }

  chooseSavePath(suggested: string): Promise<string | null> {
    return call<string | null>("choose_save_path", { suggested });
  }

  bundleExport(path: string): Promise<BundleExported> {
    return call<BundleExported>("bundle_export", { path });
  }

  configGet(): Promise<ConfigView> {
    return call<ConfigView>("config_get");
  }

  serverAdd(server: ServerForm): Promise<void> {
    return call<void>("server_add", { server });
  }

  serverEdit(name: string, server: ServerForm): Promise<void> {
    return call<void>("server_edit", { name, server });
  }

  serverRemove(name: string): Promise<void> {
    return call<void>("server_remove", { name });
  }

  importDetect(): Promise<DetectedClient[]> {
    return call<DetectedClient[]>("import_detect");
  }

  importApply(sources: ImportChoice[]): Promise<ImportOutcome> {
    return call<ImportOutcome>("import_apply", { sources });
  }

  secretStore(): Promise<SecretStoreView> {
    return call<SecretStoreView>("secret_store");
  }

  secretSet(name: string, value: string): Promise<SecretStoreView> {
    return call<SecretStoreView>("secret_set", { name, value });
  }

  /** The shell emits `config_changed` (payload: the new AppInfo) after every applied change. */
  async onConfigChanged(listener: (info: AppInfo) => void): Promise<() => void> {
    return listen<AppInfo>("config_changed", (e) => listener(e.payload));
  }
}
