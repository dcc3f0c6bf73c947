// The mock host's config file: the servers as editor forms (secrets as stored), the same
// masking, `***`-keeps-the-secret rule and field errors as the shell (crates/desktop/src/
// state/config/edit.rs), and two sample client configs to import. Pure data; MockHost turns its
// changes into simulated servers.

import type {
  ConfigError,
  DetectedClient,
  FieldError,
  ImportChoice,
  ImportOutcome,
  KeyValue,
  ServerForm,
  Transport,
} from "./types";

export const MASK = "***";

/** What the mock's file holds for the scripted servers (tokens made up, never shown). */
export function scenarioForms(servers: { name: string; transport: Transport }[]): ServerForm[] {
  return servers.map(({ name, transport }) =>
    transport === "stdio"
      ? form(name, { command: "npx", args: ["-y", `@modelcontextprotocol/server-${name}`] })
      : form(name, {
          transport,
          url: `https://${name}.example.com/mcp`,
          headers: [{ key: "Authorization", value: `Bearer mock-${name}-token` }],
        }),
  );
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

/** Shown as written when only `${…}` references (perhaps after an auth scheme word). */
export function maskedValue(value: string): string {
  if (value === "") return value;
  const rest = value.replace(/\$\{[^}]*\}/g, "").trim().toLowerCase();
  const refs = /\$\{[^}]*\}/.test(value);
  return refs && ["", "bearer", "basic", "token"].includes(rest) ? value : MASK;
}

export function maskedUrl(url: string): string {
  const [beforeHash, hash] = splitOnce(url, "#");
  const [base, query] = splitOnce(beforeHash, "?");
  let out = base.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, `$1${MASK}@`);
  if (query !== null) {
    out += "?" + query.split("&").map((kv) => {
      const [k, v] = splitOnce(kv, "=");
      return v === null ? kv : `${k}=${maskedValue(v)}`;
    }).join("&");
  }
  return hash === null ? out : `${out}#${hash}`;
}

function splitOnce(s: string, sep: string): [string, string | null] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, null] : [s.slice(0, i), s.slice(i + 1)];
}

export function masked(f: ServerForm): ServerForm {
  const hide = (kv: KeyValue[]) => kv.map(({ key, value }) => ({ key, value: maskedValue(value) }));
  return { ...structuredClone(f), env: hide(f.env), headers: hide(f.headers), url: maskedUrl(f.url) };
}

const NAME = /^[A-Za-z0-9._-]+$/;

/** The entry to store for `f` (edited from `old`), or the fields that stop it, as the shell says them. */
export function checked(f: ServerForm, old: ServerForm | null, taken: (name: string) => boolean): ServerForm {
  const errors: FieldError[] = [];
  const at = (field: string, message: string) => errors.push({ field, message });
  const name = f.name.trim();
  if (!NAME.test(name)) at("name", "a server name may contain only letters, digits, `-`, `_` and `.`");
  else if (taken(name)) at("name", "a server with this name already exists; remove it first or pick another name");
  const keep = (section: "env" | "headers", pairs: KeyValue[]): KeyValue[] =>
    pairs.flatMap(({ key, value }) => {
      if (!key.trim()) return at(section, "has an entry with no name; name it or remove it"), [];
      if (value !== MASK) return [{ key, value }];
      const stored = old?.[section].find((kv) => kv.key === key);
      if (stored) return [stored];
      return at(`${section}.${key}`, "is `***`, and nothing is stored under this name; type the value"), [];
    });
  const out: ServerForm = { ...form(name), transport: f.transport, disabled: f.disabled };
  if (f.transport === "stdio") {
    if (!f.command.trim()) at("command", "is empty; give the program to run (`npx`, a path)");
    out.command = f.command.trim();
    out.args = [...f.args];
    out.env = keep("env", f.env);
    out.cwd = f.cwd?.trim() || null;
  } else {
    let url = f.url.trim();
    if (old && maskedUrl(old.url) === url) url = old.url;
    else if (url.includes(MASK)) at("url", "holds `***` where a hidden part was changed; type the whole URL again");
    if (!url) at("url", "is empty; give the server's address (https://…/mcp)");
    else if (!/^https?:\/\/[^/]+/.test(url)) at("url", "must be an http:// or https:// URL");
    out.url = url;
    out.headers = keep("headers", f.headers);
  }
  if (errors.length > 0) {
    const lines = errors.map((e) => `${e.field}: ${e.message}`).join("; ");
    throw { kind: "config", message: `The server was not saved: ${lines}.`, fields: errors } satisfies ConfigError;
  }
  return out;
}

/** Two clients "found on this machine": their servers as they would be imported. */
export const SAMPLE_CLIENTS: { detected: Omit<DetectedClient, "servers">; servers: ServerForm[] }[] = [
  {
    detected: {
      source: "claude_desktop",
      client: "Claude Desktop",
      path: "/home/ada/.config/Claude/claude_desktop_config.json",
      skipped: [],
      error: null,
    },
    servers: [
      form("filesystem", { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/home/ada"] }),
      form("memory", { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] }),
      form("brave-search", { command: "npx", args: ["-y", "brave-search-mcp"], env: [{ key: "BRAVE_API_KEY", value: "mock-brave-key" }] }),
    ],
  },
  {
    detected: {
      source: "cursor",
      client: "Cursor",
      path: "/home/ada/.cursor/mcp.json",
      skipped: [{ name: "socket", reason: 'type = "ws": must be one of stdio, http, sse' }],
      error: null,
    },
    servers: [
      form("linear", { transport: "http", url: "https://mcp.linear.app/mcp", headers: [{ key: "Authorization", value: "Bearer ${env:LINEAR_TOKEN}" }] }),
    ],
  },
];

export function detect(configured: (name: string) => boolean): DetectedClient[] {
  return SAMPLE_CLIENTS.map(({ detected, servers }) => ({
    ...structuredClone(detected),
    servers: servers.map((s) => ({
      name: s.name,
      transport: s.transport,
      conflict: configured(s.name) ? `a server named \`${s.name}\` is already configured; it is kept` : null,
    })),
  }));
}

/** The forms to add for `choices`, and the outcome to report; never replaces a configured name. */
export function importChoices(
  choices: ImportChoice[],
  configured: (name: string) => boolean,
): { forms: ServerForm[]; outcome: ImportOutcome } {
  const outcome: ImportOutcome = { added: [], conflicts: [], skipped: [], disabled: [] };
  const forms: ServerForm[] = [];
  for (const choice of choices) {
    const client = SAMPLE_CLIENTS.find((c) => c.detected.source === choice.source);
    if (!client) {
      throw { kind: "config", message: `There is no ${choice.source} config on this machine to import.` } satisfies ConfigError;
    }
    const { client: label } = client.detected;
    for (const s of client.servers) {
      if (choice.servers && !choice.servers.includes(s.name)) continue;
      if (configured(s.name) || forms.some((f) => f.name === s.name)) {
        outcome.conflicts.push({
          name: s.name,
          reason: `a server named \`${s.name}\` is already configured; it was kept and the one from ${label} was not imported (rename one to keep both)`,
        });
        continue;
      }
      forms.push(structuredClone(s));
      outcome.added.push(s.name);
    }
    outcome.skipped.push(...client.detected.skipped);
  }
  return { forms, outcome };
}
