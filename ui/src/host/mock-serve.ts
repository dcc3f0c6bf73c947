// What the mock host answers for "Serve over HTTP" (the shell's gateway_* commands in
// crates/desktop/src/serve.rs): the endpoint on at 127.0.0.1:7424 with one client's token, turned
// on and off in memory (port 8080 is held by another program), tokens added and removed. The usage text is the one
// lifeline_core::gateway::http::tokens::usage makes.

import type { EndpointView, NewToken, TokenClient } from "./types";

const TOKENS_FILE = "/home/ada/.local/state/lifeline/gateway-tokens.json";
const DEFAULT_PORT = 7424;
/** Ports another program holds in the mock: the endpoint cannot listen there. */
const TAKEN = new Set([8080]);

function url(port: number, name: string): string {
  return `http://127.0.0.1:${port}/servers/${name}/mcp`;
}

/** The snippet `lifeline serve token add` prints (tokens::usage). */
export function mockUsage(client: string, token: string, port: number): string {
  const u = url(port, "NAME");
  const header = `Authorization: Bearer ${token}`;
  return [
    `Token for \`${client}\` (kept in ${TOKENS_FILE}, readable by you only):`,
    `  ${token}`,
    "",
    `Each server's URL:  ${u}`,
    `Header:             ${header}`,
    "",
    "Claude Code:",
    `  claude mcp add --transport http NAME ${u} --header "${header}"`,
    'VS Code (.vscode/mcp.json, under "servers"):',
    `  "NAME": { "type": "http", "url": "${u}", "headers": { "Authorization": "Bearer ${token}" } }`,
    'Cursor (~/.cursor/mcp.json, under "mcpServers"):',
    `  "NAME": { "url": "${u}", "headers": { "Authorization": "Bearer ${token}" } }`,
    "",
  ].join("\n");
}

export class MockServe {
  private enabled = true;
  private configured = DEFAULT_PORT;
  private readonly clients = new Map<string, string>([["claude-code", "2026-12-01T09:12:00.000Z"]]);
  private made = 0;

  endpoint(): EndpointView {
    if (this.enabled && TAKEN.has(this.configured)) {
      // What serve.rs says when another program holds the port (http::bind_problem).
      const message =
        `port 127.0.0.1:${this.configured} is in use by another program: change ` +
        "`lifeline.serve.port` (here, or in the config), or quit that program";
      return {
        enabled: true,
        url: null,
        port: null,
        configured_port: this.configured,
        tokens_file: TOKENS_FILE,
        error: { kind: "port_in_use", message },
      };
    }
    const port = this.enabled ? this.configured || DEFAULT_PORT + 1 : null;
    return {
      enabled: this.enabled,
      url: port === null ? null : url(port, "NAME"),
      port,
      configured_port: this.configured,
      tokens_file: TOKENS_FILE,
      error: null,
    };
  }

  set(enabled: boolean, port: number): EndpointView {
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw { kind: "config", message: "lifeline.serve.port: must be a port number (0 to 65535)" };
    }
    this.enabled = enabled;
    this.configured = port;
    return this.endpoint();
  }

  tokens(): TokenClient[] {
    return [...this.clients.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, created]) => ({ name, created }));
  }

  add(client: string): NewToken {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(client)) {
      throw {
        kind: "serve",
        message: `"${client}" is not a client name: 1 to 64 ASCII letters, digits, \`-\`, \`_\` or \`.\``,
      };
    }
    this.made += 1;
    const token = `lifeline_mock${String(this.made).padStart(4, "0")}${"0".repeat(51)}`;
    this.clients.set(client, new Date().toISOString());
    return { client, token, usage: mockUsage(client, token, this.endpoint().port ?? (this.configured || DEFAULT_PORT)) };
  }

  remove(client: string): boolean {
    return this.clients.delete(client);
  }
}
