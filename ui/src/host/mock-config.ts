// The mock host's config file, as the shell recorded it: `recorded/config.json` holds the
// entry behind each row, every entry's form as `config_get` masks it, and each edit the UI's
// tests and demo make with the shell's answer (the entry it saved, or its error), written by
// crates/desktop/src/state/config/recording.rs (`make recording`; `make check` fails while
// it is stale). This module only looks answers up: nothing here masks or validates. An edit
// that was not recorded is refused with an error that says how to record it. The two sample
// client configs to import are scripted here.

import data from "./recorded/config.json";
import type {
  ConfigError,
  DetectedClient,
  ImportChoice,
  ImportOutcome,
  ServerForm,
} from "./types";

/** An entry of the file's `mcpServers`, as JSON. */
export type Entry = Record<string, unknown>;

/** A server of the mock's file: its name and its entry (secrets as stored). */
export interface Stored {
  name: string;
  entry: Entry;
}

interface RecordedEdit {
  op: "add" | "edit";
  name: string | null;
  form: ServerForm;
  old: Entry | null;
  others: string[];
  saved: Stored | null;
  error: ConfigError | null;
}

interface Recording {
  servers: Record<string, Entry>;
  clients: Record<string, Record<string, Entry>>;
  masks: { entry: Entry; form: Omit<ServerForm, "name"> }[];
  edits: RecordedEdit[];
}

const REC = data as unknown as Recording;

/** JSON with every object's keys sorted: equal for equal values. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

const same = (a: unknown, b: unknown) => canonical(a) === canonical(b);

function unrecorded(what: string, detail: unknown): ConfigError {
  console.error(`mock host: no recording of ${what}:`, canonical(detail));
  return {
    kind: "config",
    message:
      `The mock host has no recording of ${what}. Add it to crates/desktop/src/state/config/recording.rs ` +
      "and run `make recording` (the request is in the browser console).",
  };
}

/** The file's entry for a row replaying the recorded server or archetype `source`. */
export function entryOf(name: string, source: string): Stored {
  const entry = REC.servers[source];
  if (!entry) throw unrecorded(`the server ${source}`, { source });
  return { name, entry: structuredClone(entry) };
}

/** What `config_get` shows for `s`: its recorded form, secrets masked. */
export function shown(s: Stored): ServerForm {
  const mask = REC.masks.find((m) => same(m.entry, s.entry));
  if (!mask) throw unrecorded(`the form of ${s.name}`, s.entry);
  return { name: s.name, ...structuredClone(mask.form) };
}

/** The shell's answer to adding `form` (`name` null) or editing the server `name` of
 * `file`: the server to store in its place, or the recorded error, thrown. */
export function edited(file: Stored[], name: string | null, form: ServerForm): Stored {
  const old = name === null ? null : (file.find((s) => s.name === name)?.entry ?? null);
  const others = file.map((s) => s.name).filter((n) => n !== name).sort();
  const recorded = REC.edits.find(
    (e) =>
      e.op === (name === null ? "add" : "edit") &&
      e.name === name &&
      same(e.form, form) &&
      same(e.old, old) &&
      same([...e.others].sort(), others),
  );
  if (!recorded) throw unrecorded(name === null ? "this new server" : `this edit of ${name}`, { name, form, old, others });
  if (recorded.error) throw structuredClone(recorded.error);
  return structuredClone(recorded.saved!);
}

export function form(name: string, fields: Partial<ServerForm> = {}): ServerForm {
  return {
    name,
    transport: "stdio",
    command: "",
    args: [],
    env: [],
    cwd: null,
    url: "",
    headers: [],
    disabled: false,
    ...fields,
  };
}

function recordedClient(source: string): Stored[] {
  return Object.entries(REC.clients[source] ?? {}).map(([name, entry]) => ({ name, entry }));
}

/** Two clients "found on this machine"; their servers import as recorded. */
const SAMPLE_CLIENTS: { detected: Omit<DetectedClient, "servers">; servers: Stored[] }[] = [
  {
    detected: {
      source: "claude_desktop",
      client: "Claude Desktop",
      path: "/home/ada/.config/Claude/claude_desktop_config.json",
      skipped: [],
      error: null,
    },
    servers: recordedClient("claude_desktop"),
  },
  {
    detected: {
      source: "cursor",
      client: "Cursor",
      path: "/home/ada/.cursor/mcp.json",
      skipped: [{ name: "socket", reason: 'type = "ws": must be one of stdio, http, sse' }],
      error: null,
    },
    servers: recordedClient("cursor"),
  },
];

export function detect(configured: (name: string) => boolean): DetectedClient[] {
  return SAMPLE_CLIENTS.map(({ detected, servers }) => ({
    ...structuredClone(detected),
    servers: servers.map((s) => ({
      name: s.name,
      transport: shown(s).transport,
      conflict: configured(s.name) ? `a server named \`${s.name}\` is already configured; it is kept` : null,
    })),
  }));
}

/** The servers to add for `choices`, and the outcome to report; never replaces a configured name. */
export function importChoices(
  choices: ImportChoice[],
  configured: (name: string) => boolean,
): { stored: Stored[]; outcome: ImportOutcome } {
  const outcome: ImportOutcome = { added: [], conflicts: [], skipped: [], disabled: [] };
  const stored: Stored[] = [];
  for (const choice of choices) {
    const client = SAMPLE_CLIENTS.find((c) => c.detected.source === choice.source);
    if (!client) {
      throw { kind: "config", message: `There is no ${choice.source} config on this machine to import.` } satisfies ConfigError;
    }
    const { client: label } = client.detected;
    for (const s of client.servers) {
      if (choice.servers && !choice.servers.includes(s.name)) continue;
      if (configured(s.name) || stored.some((f) => f.name === s.name)) {
        outcome.conflicts.push({
          name: s.name,
          reason: `a server named \`${s.name}\` is already configured; it was kept and the one from ${label} was not imported (rename one to keep both)`,
        });
        continue;
      }
      stored.push(structuredClone(s));
      outcome.added.push(s.name);
    }
    outcome.skipped.push(...client.detected.skipped);
  }
  return { stored, outcome };
}
