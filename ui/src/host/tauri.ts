// The Tauri shell's host: commands over `invoke`, events over one `Channel`. The only module
// (with the @tauri-apps/api it imports) that knows the UI runs in a webview. Command names and
// argument keys are the shell's contract (ui/README.md); COMMANDS is that table, once.

import { Channel, invoke } from "@tauri-apps/api/core";
import { listen } from "@tauri-apps/api/event";
import { toCommandError } from "./errors";
import type { Host } from "./index";
import type { AppInfo, CallOptions, CallProgress, Event, HistoryQuery } from "./types";

/** Rejections become `CommandError` (`{kind, message}`) whatever the shell or IPC threw. */
async function call<T>(command: string, args?: Record<string, unknown>): Promise<T> {
  try {
    return await invoke<T>(command, args);
  } catch (e) {
    throw toCommandError(e);
  }
}

/** The methods that are one command, each argument sent under a name; the rest are below. */
type Plain = Exclude<
  keyof Host,
  "kind" | "subscribe" | "callTool" | "historyEvents" | "historyFailures" | "historyCalls" | "onConfigChanged"
>;

/** One name per parameter of the method `F`, in order. */
type ArgNames<F> = F extends (...args: infer A) => unknown ? { [I in keyof A]: string } : never;

/** Each plain method: the shell's command, then the key each argument goes under. */
const COMMANDS: { readonly [K in Plain]: readonly [command: string, ...keys: ArgNames<Host[K]>] } = {
  snapshot: ["snapshot"],
  reconnect: ["reconnect", "server"],
  reset: ["reset", "server"],
  disable: ["disable", "server"],
  enable: ["enable", "server"],
  signIn: ["auth_sign_in", "server"],
  signOut: ["auth_sign_out", "server"],
  reconnectAllFailed: ["reconnect_all_failed"],
  appInfo: ["app_info"],
  painted: ["ui_painted"],
  toolList: ["tool_list", "server"],
  cancelCall: ["cancel_call", "callId"],
  serverStderr: ["server_stderr", "server"],
  serverCommand: ["server_command", "server"],
  serverConfig: ["server_config", "server"],
  serverPolicy: ["server_policy", "server"],
  serverHosts: ["server_hosts", "server"],
  toolReview: ["tool_review", "server"],
  toolDecide: ["tool_decide", "server", "decision", "tools"],
  clientsList: ["clients_list"],
  clientsPreview: ["clients_preview", "client", "servers"],
  clientsConnect: ["clients_connect", "client", "servers"],
  clientsRestore: ["clients_restore", "client", "force"],
  gatewayEndpoint: ["gateway_endpoint"],
  gatewaySet: ["gateway_set", "enabled", "port"],
  gatewayTokens: ["gateway_tokens"],
  gatewayTokenAdd: ["gateway_token_add", "client"],
  gatewayTokenRemove: ["gateway_token_remove", "client"],
  profilesGet: ["profiles_get"],
  profileToolSet: ["profile_tool_set", "profile", "server", "tool", "shown"],
  bundlePreview: ["bundle_preview"],
  bundleExport: ["bundle_export", "path"],
  chooseSavePath: ["choose_save_path", "suggested"],
  configGet: ["config_get"],
  serverAdd: ["server_add", "server"],
  serverEdit: ["server_edit", "name", "server"],
  serverRemove: ["server_remove", "name"],
  importDetect: ["import_detect"],
  importApply: ["import_apply", "sources"],
  secretStore: ["secret_store"],
  secretSet: ["secret_set", "name", "value"],
};

/** `reconnect("a")` is `invoke("reconnect", {server: "a"})`. What it resolves with is the
 * shell's to keep (the contract), as with any `invoke`: hence the one cast. */
function plainMethods(): Pick<Host, Plain> {
  const entries = Object.entries(COMMANDS).map(([method, [command, ...keys]]) => {
    const send = (...args: unknown[]) => call(command, Object.fromEntries(keys.map((key, i) => [key, args[i]])));
    return [method, send];
  });
  return Object.fromEntries(entries) as Pick<Host, Plain>;
}

async function subscribe(onEvent: (e: Event) => void): Promise<() => void> {
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

function callTool(server: string, tool: string, args: unknown, opts: CallOptions = {}): Promise<unknown> {
  const onProgress = opts.onProgress;
  const progress = onProgress ? new Channel<CallProgress>((p) => onProgress(p)) : undefined;
  return call<unknown>("call_tool", { server, tool, args, callId: opts.callId, progress });
}

/** A history query goes as it is: `{server?, before?, limit}`. */
function history<T>(command: string): (query: HistoryQuery) => Promise<T[]> {
  return (query) => call<T[]>(command, { ...query });
}

export function tauriHost(): Host {
  return {
    ...plainMethods(),
    kind: "tauri",
    subscribe,
    callTool,
    historyEvents: history("history_events"),
    historyFailures: history("history_failures"),
    historyCalls: history("history_calls"),
    /** The shell emits `config_changed` (payload: the new AppInfo) after every applied change. */
    onConfigChanged: (listener) => listen<AppInfo>("config_changed", (e) => listener(e.payload)),
  };
}
