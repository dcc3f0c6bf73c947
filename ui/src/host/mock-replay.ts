// The mock host's story, as the real core told it: `recorded/scenario.json` holds the events
// that lifeline-core's supervisors published against lifeline-fixture processes (recorded by
// tests/tests/it/recording.rs on a paused clock; `make recording` rewrites it, and a test in
// `make check` fails while it is stale), the snapshots, tools and stderr at the moment the page
// loads, and what each command did from that moment. This module only reads it: which rows
// exist, which recorded server each row replays, and the recorded events as wire `Event`s on
// the mock's clock. Nothing here decides a state.

import data from "./recorded/scenario.json";
import { iso } from "./mock-wire";
import type { Event, GenerationStderr, ServerView, Snapshot, ToolDef, Transport } from "./types";

/** A wire event as recorded: no `seq` (the mock numbers what it plays), `at` and a state's
 * `next_attempt_at` in ms relative to the page load (in a branch: to the command). */
export type RecordedEvent = { at: number; server: string; generation: number; type: string } & Record<string, unknown>;

/** A recorded snapshot: the wire `Snapshot`, its `next_attempt_at` relative to the page load. */
export type RecordedSnapshot = Omit<Snapshot, "next_attempt_at"> & { next_attempt_at: number | null };

export interface RecordedServer {
  snapshot: RecordedSnapshot;
  tools: ToolDef[];
  stderr: GenerationStderr[];
}

export type Command = "reconnect" | "reset" | "disable" | "enable";

interface Recording {
  servers: RecordedServer[];
  events: RecordedEvent[];
  branches: Record<string, Partial<Record<Command, RecordedEvent[]>>>;
}

const REC = data as unknown as Recording;

/** The four servers of the story, in the dashboard's order. */
export const STORY = ["filesystem", "github", "linear", "sqlite"] as const;

/** The archetypes that generated rows and servers added in the editor replay. */
export const HEALTHY = "generated-ok";
export const REFUSING = "generated-refusing";
export const DISABLED = "generated-off";

const TRANSPORTS: Record<string, Transport> = {
  filesystem: "stdio",
  github: "http",
  linear: "sse",
  sqlite: "stdio",
  [HEALTHY]: "stdio",
  [REFUSING]: "http",
  [DISABLED]: "stdio",
};

/** When the archetypes started, relative to the page load (the recording's choice). */
const ARCHETYPE_START = Math.min(...REC.events.filter((e) => e.server === HEALTHY).map((e) => e.at));

/** One row of the mock: its name, and the recorded server whose story it tells. */
export interface Row {
  name: string;
  source: string;
  transport: Transport;
  /** Added to the recorded times of `source` (a generated row starts at its own moment). */
  shift: number;
}

const WORDS = [
  "notes", "search", "calendar", "jira", "slack", "postgres", "redis", "s3", "browser",
  "memory", "fetch", "time", "weather", "maps", "docs", "sentry", "figma", "notion",
  "stripe", "vercel",
];

/** The four servers of the story, then generated rows up to `count`: every seventh replays
 * the server nobody listens for, the others the healthy one, each from its own start. */
export function rows(count: number): Row[] {
  const out: Row[] = STORY.map((name) => ({ name, source: name, transport: TRANSPORTS[name]!, shift: 0 }));
  for (let i = out.length; i < count; i++) {
    const source = i % 7 === 3 ? REFUSING : HEALTHY;
    const start = -((i * 37) % 600) * 1000;
    out.push({
      name: `${WORDS[i % WORDS.length]}-${String(i).padStart(3, "0")}`,
      source,
      transport: TRANSPORTS[source]!,
      shift: start - ARCHETYPE_START,
    });
  }
  return out;
}

/** A row for a server added in the editor: the healthy archetype (or the disabled one),
 * starting `at` ms after the page load. */
export function addedRow(name: string, transport: Transport, disabled: boolean, at: number): Row {
  return { name, source: disabled ? DISABLED : HEALTHY, transport, shift: at - ARCHETYPE_START };
}

/** The recorded events of `row.source` from its start, as `row`, times on the page-load axis. */
export function storyOf(row: Row): RecordedEvent[] {
  return REC.events.filter((e) => e.server === row.source).map((e) => retimed(e, row.name, row.shift));
}

/** What `command` did to `row.source` from the page load on, as `row`, `at` ms after it. */
export function branchOf(row: Row, command: Command, at: number): RecordedEvent[] {
  const list = REC.branches[row.source]?.[command] ?? [];
  return list.map((e) => retimed(e, row.name, at));
}

/** The recorded tool definitions of the row's server (the fixture's). */
export function toolsOf(row: Row): ToolDef[] {
  return structuredClone(server(row.source)?.tools ?? []);
}

/** The stderr of the recorded server's last two generations (stdio only). */
export function stderrOf(row: Row): GenerationStderr[] {
  return structuredClone(server(row.source)?.stderr ?? []);
}

/** The recorded snapshot at the page load (tests compare the replayed view with it). */
export function snapshotOf(name: string): RecordedSnapshot | undefined {
  return structuredClone(server(name)?.snapshot);
}

function server(name: string): RecordedServer | undefined {
  return REC.servers.find((s) => s.snapshot.server === name);
}

function retimed(e: RecordedEvent, name: string, shift: number): RecordedEvent {
  const out: RecordedEvent = { ...structuredClone(e), server: name, at: e.at + shift };
  if (typeof e.next_attempt_at === "number") out.next_attempt_at = e.next_attempt_at + shift;
  return out;
}

/** A recorded event as the wire `Event` the app would send: `seq`, and ISO times from `t0`. */
export function toWire(e: RecordedEvent, seq: number, t0: number): Event {
  const wire: Record<string, unknown> = { ...e, seq, at: iso(t0 + e.at) };
  if ("next_attempt_at" in e) {
    wire.next_attempt_at = typeof e.next_attempt_at === "number" ? iso(t0 + e.next_attempt_at) : null;
  }
  return wire as unknown as Event;
}

/** What the shell keeps per server, updated by one event (crates/desktop/src/view.rs: the core's
 * snapshot fields, plus restarts counted from the generations seen). */
export function applyToView(view: ServerView, e: Event): void {
  if (e.generation > view.generation) {
    if (e.generation > 1) {
      view.restarts = e.generation - 1;
      view.last_restart_at = e.at;
    }
    view.generation = e.generation;
  }
  switch (e.type) {
    case "state": {
      const { v: _v, seq: _s, at: _a, server: _n, type: _t, generation: _g, ...info } = e;
      Object.assign(view, info);
      break;
    }
    case "tools":
      view.tools = [...e.names];
      view.tools_stale = e.stale;
      view.tools_held = e.held;
      view.tools_new = e.new;
      break;
    case "round_trip":
      view.last_round_trip_ms = e.round_trip_ms;
      view.last_round_trip_at = e.at;
      break;
    case "auth":
      view.auth = structuredClone(e.auth);
      break;
    default:
      break;
  }
}
