// The wire types between the Rust side and the UI. Every type the backend serializes is
// generated from Rust by ts-rs into ./generated.ts (crates/desktop/src/wire.rs; `make types`
// regenerates it, and a test fails while it is stale). This file re-exports them under the
// names the UI uses and keeps only what the backend has no Rust type for: callbacks, command
// arguments, and the MCP JSON the shell passes through untouched. docs/events.md is the schema.
//
// Integers are `number`: every integer on the wire fits in 2^53 (seq, generation, milliseconds).

import type {
  CallOutcome,
  ErrorKind,
  ErrorView,
  Event,
  Exported,
  FailureInfo,
  ProgressView,
  CommandView,
  Detected,
  PolicyView,
  ServerView,
} from "./generated";

export type * from "./generated";

/** `ErrorKind` (crates/core/src/error.rs): what kind of failure a `Failure` is. */
export type FailureKind = ErrorKind;

/** `FailureInfo`: a redacted failure, the same object as a state's `cause`. */
export type Failure = FailureInfo;

export type StateEvent = Extract<Event, { type: "state" }>;
export type FailureEvent = Extract<Event, { type: "failure" }>;
export type ToolsEvent = Extract<Event, { type: "tools" }>;
export type CallEvent = Extract<Event, { type: "call" }>;
export type RoundTripEvent = Extract<Event, { type: "round_trip" }>;
/** A change of a server's OAuth sign-in (docs/auth.md): never a token. */
export type AuthEvent = Extract<Event, { type: "auth" }>;
export type EventType = Event["type"];

/** How a server is reached, as configured. */
export type Transport = ServerView["transport"];

/** Every command error, as the shell serializes it (`ErrorView`): never a bare string. A
 * rejected config edit also names its `fields`. */
export type CommandError = ErrorView;
export type ConfigError = ErrorView;

/** Something the shell wants shown as a banner (an `ErrorView`: `{kind, message}`). */
export type Notice = ErrorView;

/** One tool as the server lists it (`tool_list`): the MCP `Tool`, its text scrubbed of secrets. */
export type { Tool as ToolDef } from "./generated";

/** One `notifications/progress` of a call, on the call's progress Channel. */
export type CallProgress = ProgressView;

/** `server_command`: what a stdio server's command resolves to. Env variable names only, never values. */
export type ResolvedCommand = CommandView;

/** What the shell's `bundle_export` returns: where the zip was written, and its size on disk. */
export type BundleExported = Exported;

/** A client config found on this machine (`import_detect`). */
export type DetectedClient = Detected;

// ## UI-only: callbacks, command arguments, and MCP JSON passed through as it came

/** How the UI names a call (for `cancel_call`) and hears its progress. */
export interface CallOptions {
  callId?: string;
  onProgress?: (p: CallProgress) => void;
}

/** One MCP content block of a tool result; the common ones typed, any other kind still renders as JSON. */
export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image" | "audio"; data: string; mimeType: string }
  | { type: "resource_link"; uri: string; name?: string }
  | { type: "resource"; resource: { uri: string; text?: string; mimeType?: string } }
  | { type: string; [key: string]: unknown };

/** What `call_tool` resolves to: the MCP `CallToolResult`. */
export interface CallResult {
  content?: ContentBlock[];
  isError?: boolean;
  structuredContent?: unknown;
}

/** `server_config`: the server's entry as the file's keys, every secret value `***`. */
export type MaskedServerConfig = Record<string, unknown>;

/** `server_policy`: the reconnect policy and timeouts the server runs with (config over defaults). */
export type ServerPolicy = PolicyView;

// ## History of earlier runs (src-tauri/README.md, docs/history.md)

/** What `history_*` commands filter by; `limit` is 1 to 1000. Rows come newest first. */
export interface HistoryQuery {
  server?: string;
  /** Only rows with an `id` below this one: the next page. */
  before?: number;
  limit: number;
}

/** Kept for code that names an outcome by its old name. */
export type { CallOutcome };
