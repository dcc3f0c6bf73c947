// What the mock host answers for "Connect a client" (the shell's clients_* commands, which call
// lifeline_core::config::clients): three clients' files held in memory, a masked diff of the
// entries connecting rewrites, a backup per connect (in the data dir's backups/), and restore. Claude Code rewrites its file
// as it runs (docs/clients.md), so here, as there, its file has always changed since Lifeline
// wrote it and a restore asks first.

import type { ClientView, ConnectPreview, Connected, Restored } from "./types";

const LIFELINE = "/usr/bin/lifeline";
/** Where backups go: `backups/` beside clients.json in Lifeline's data dir, never beside the file. */
const BACKUPS = "/home/ada/.local/share/lifeline/backups";
/** A stand-in for the hash of the file's path that the real name carries. */
const PATH_HASH: Record<string, string> = {
  "claude-desktop": "4c1f9e2a7b3d5e60",
  "claude-code": "9a0b8c7d6e5f4a3b",
  cursor: "1d2e3f4a5b6c7d8e",
};

interface MockEntry {
  name: string;
  /** The entry's lines before connecting, secrets already masked as the preview shows them. */
  lines: string[];
  through: boolean;
}

interface MockClient {
  client: string;
  label: string;
  path: string | null;
  entries: MockEntry[];
  /** Backups, newest last: the entries routed by each connect. */
  backups: { names: string[]; backup: string }[];
}

function clientsAtStart(): MockClient[] {
  return [
    {
      client: "claude-desktop",
      label: "Claude Desktop",
      path: "/home/ada/.config/Claude/claude_desktop_config.json",
      entries: [
        {
          name: "github",
          lines: ['"command": "npx",', '"args": ["-y", "@modelcontextprotocol/server-github"],', '"env": { "GITHUB_TOKEN": "***" }'],
          through: false,
        },
        { name: "filesystem", lines: [`"command": "${LIFELINE}",`, '"args": ["connect", "filesystem"]'], through: true },
      ],
      backups: [],
    },
    {
      client: "claude-code",
      label: "Claude Code",
      path: "/home/ada/.claude.json",
      entries: [{ name: "sqlite", lines: ['"type": "stdio",', '"command": "uvx",', '"args": ["mcp-server-sqlite"]'], through: false }],
      backups: [],
    },
    {
      client: "cursor",
      label: "Cursor",
      path: "/home/ada/.cursor/mcp.json",
      entries: [
        { name: "linear", lines: ['"url": "https://mcp.linear.app/sse",', '"headers": { "Authorization": "***" }'], through: false },
        { name: "notes", lines: ['"command": "node",', '"args": ["/home/ada/notes-mcp/index.js"]'], through: false },
      ],
      backups: [],
    },
    { client: "vscode", label: "VS Code", path: null, entries: [], backups: [] },
  ];
}

function refusal(kind: string, message: string): Error & { kind: string } {
  return Object.assign(new Error(message), { kind });
}

export class MockClients {
  #clients = clientsAtStart();

  list(): ClientView[] {
    return this.#clients.map((c) => ({
      client: c.client,
      label: c.label,
      path: c.path,
      servers: c.entries.map((e) => ({
        field: `${c.client === "vscode" ? "servers" : "mcpServers"}.${e.name}`,
        name: e.name,
        through_lifeline: e.through,
      })),
      restorable: c.backups.length > 0,
      backup: c.backups[c.backups.length - 1]?.backup ?? null,
      problem: null,
    }));
  }

  #find(id: string): MockClient & { path: string } {
    const c = this.#clients.find((x) => x.client === id);
    if (!c) throw refusal("config", `unknown client "${id}": use claude-desktop, claude-code, cursor or vscode`);
    if (c.path === null) throw refusal("config", `no ${c.label} config found`);
    return c as MockClient & { path: string };
  }

  preview(id: string, servers: string[]): ConnectPreview {
    const c = this.#find(id);
    if (servers.length === 0) throw refusal("config", "choose at least one server");
    const unknown = servers.filter((s) => !c.entries.some((e) => e.name === s));
    if (unknown.length > 0) throw refusal("config", `${c.path} has no server named ${unknown.join(", ")}`);
    const chosen = c.entries.filter((e) => servers.includes(e.name));
    const routed = chosen.filter((e) => !e.through);
    let diff = "";
    if (routed.length > 0) {
      diff = `--- ${c.path}\n+++ ${c.path}\n`;
      for (const e of routed) {
        diff += `@@ ${e.name} @@\n     "${e.name}": {\n`;
        diff += e.lines.map((l) => `-      ${l}\n`).join("");
        diff += `+      "command": "${LIFELINE}",\n+      "args": ["connect", "${e.name}"]\n     },\n`;
      }
    }
    return {
      client: c.client,
      path: c.path,
      diff,
      routed: routed.map((e) => `mcpServers.${e.name}`),
      unchanged: chosen.filter((e) => e.through).map((e) => ({ field: `mcpServers.${e.name}`, reason: "already goes through Lifeline" })),
      import: routed.map((e) => e.name),
      config: "/home/ada/.config/lifeline/config.json",
    };
  }

  connect(id: string, servers: string[]): Connected {
    const p = this.preview(id, servers);
    const c = this.#find(id);
    const names = p.import;
    let backup: string | null = null;
    if (names.length > 0) {
      const n = c.backups.length > 0 ? `-${c.backups.length + 1}` : "";
      backup = `${BACKUPS}/${c.client}-${PATH_HASH[c.client] ?? "0000000000000000"}-20261129T170500Z${n}.json`;
      c.backups.push({ names, backup });
      for (const e of c.entries) if (names.includes(e.name)) e.through = true;
    }
    return { path: c.path, backup, routed: p.routed, imported: names };
  }

  restore(id: string, force: boolean): Restored {
    const c = this.#find(id);
    const last = c.backups[c.backups.length - 1];
    if (!last) throw refusal("config", `nothing to restore: Lifeline has not connected ${c.client}`);
    if (c.client === "claude-code" && !force) {
      throw refusal(
        "changed_since",
        `${c.path} changed since Lifeline wrote it at 2026-11-29T17:05:00Z; restoring would undo:\n  numStartups: changed since\n  projects: changed since\nNothing was restored. To put the backup (${last.backup}) back anyway, run \`lifeline clients restore claude-code --force\`.`,
      );
    }
    c.backups.pop();
    for (const e of c.entries) if (last.names.includes(e.name)) e.through = false;
    return { path: c.path, backup: last.backup, servers: last.names };
  }
}
