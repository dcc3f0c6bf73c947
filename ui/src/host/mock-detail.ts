// What the mock host answers for the detail panel: tool definitions with realistic input
// schemas (some simple enough for a generated form, some only for raw JSON), how each tool
// behaves when called (results, tool errors, progress), stderr per generation, the resolved
// command of the stdio servers and their configs with the secret values masked, as the shell
// would send them.

import type {
  CallResult,
  GenerationStderr,
  MaskedServerConfig,
  ResolvedCommand,
  ServerPolicy,
  ToolDef,
  Transport,
} from "./types";

type Props = Record<string, Record<string, unknown>>;

const obj = (properties: Props, required: string[] = []): Record<string, unknown> => ({
  type: "object",
  properties,
  required,
});
const str = (description: string, extra: Record<string, unknown> = {}) => ({ type: "string", description, ...extra });
const int = (description: string, extra: Record<string, unknown> = {}) => ({ type: "integer", description, ...extra });
const bool = (description: string) => ({ type: "boolean", description });
const strings = (description: string) => ({ type: "array", items: { type: "string" }, description });

/** Per tool: what the server says about it. Tools not listed get a generic one-string schema. */
const DEFS: Record<string, Omit<ToolDef, "name">> = {
  read_file: {
    description: "Read the complete contents of a file from the file system.",
    inputSchema: obj({ path: str("Path of the file"), head: int("Only the first N lines", { minimum: 1 }) }, ["path"]),
    annotations: { readOnlyHint: true },
  },
  read_multiple_files: {
    description: "Read the contents of multiple files simultaneously.",
    inputSchema: obj({ paths: strings("Paths of the files") }, ["paths"]),
    annotations: { readOnlyHint: true },
  },
  write_file: {
    description: "Create a new file or completely overwrite an existing file with new content.",
    inputSchema: obj({ path: str("Path of the file"), content: str("The new content") }, ["path", "content"]),
    annotations: { destructiveHint: true },
  },
  edit_file: {
    description: "Make line-based edits to a text file; returns a git-style diff.",
    inputSchema: obj(
      {
        path: str("Path of the file"),
        edits: { type: "array", items: obj({ oldText: str("Text to find"), newText: str("Replacement") }, ["oldText", "newText"]) },
        dryRun: bool("Preview the diff without writing"),
      },
      ["path", "edits"],
    ),
  },
  list_directory: {
    description: "Get a detailed listing of all files and directories in a specified path.",
    inputSchema: obj({ path: str("Directory") }, ["path"]),
    annotations: { readOnlyHint: true },
  },
  search_files: {
    description: "Recursively search for files and directories matching a pattern. Reports progress per directory.",
    inputSchema: obj(
      {
        path: str("Where to start"),
        pattern: str("Glob pattern", { minLength: 1 }),
        maxDepth: int("How deep to descend", { minimum: 1, maximum: 20 }),
        followSymlinks: bool("Follow symbolic links"),
      },
      ["path", "pattern"],
    ),
    annotations: { readOnlyHint: true },
  },
  move_file: {
    description: "Move or rename files and directories.",
    inputSchema: obj({ source: str("From"), destination: str("To") }, ["source", "destination"]),
  },
  list_allowed_directories: {
    description: "The directories this server may access.",
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true },
  },
  list_issues: {
    description: "List issues in a repository, newest first.",
    inputSchema: obj(
      {
        owner: str("Repository owner"),
        repo: str("Repository name"),
        state: { type: "string", enum: ["open", "closed", "all"], description: "Which issues", default: "open" },
        per_page: int("Results per page", { minimum: 1, maximum: 100 }),
      },
      ["owner", "repo"],
    ),
    annotations: { readOnlyHint: true, openWorldHint: true },
  },
  create_issue: {
    description: "Create a new issue.",
    inputSchema: obj(
      { owner: str("Repository owner"), repo: str("Repository name"), title: str("Title", { minLength: 1 }), body: str("Body"), labels: strings("Labels") },
      ["owner", "repo", "title"],
    ),
  },
  read_query: {
    description: "Execute a SELECT query on the SQLite database.",
    inputSchema: obj({ query: str("SELECT statement") }, ["query"]),
    annotations: { readOnlyHint: true },
  },
  describe_table: {
    description: "Get the schema of a table.",
    inputSchema: obj({ table_name: str("Table") }, ["table_name"]),
    annotations: { readOnlyHint: true },
  },
};

const GENERIC: Omit<ToolDef, "name"> = {
  description: "A tool of this mock server.",
  inputSchema: obj({ input: str("Anything") }),
};

export function mockToolDefs(names: readonly string[]): ToolDef[] {
  return names.map((name) => ({ name, ...structuredClone(DEFS[name] ?? GENERIC) }));
}

/** How a mock call plays out: `steps` progress notifications `stepMs` apart, then the result. */
export interface MockBehaviour {
  steps: number;
  stepMs: number;
  result: CallResult;
}

export function mockBehaviour(tool: string, args: Record<string, unknown>): MockBehaviour {
  const text = (t: string): CallResult => ({ content: [{ type: "text", text: t }], isError: false });
  switch (tool) {
    case "search_files":
      return {
        steps: 5,
        stepMs: 400,
        result: text(`${args.path ?? "."}/src/main.rs\n${args.path ?? "."}/src/lib.rs`),
      };
    case "read_file":
      return String(args.path ?? "").startsWith("/etc")
        ? {
            steps: 0,
            stepMs: 0,
            result: {
              content: [{ type: "text", text: `Access denied - path outside allowed directories: ${args.path}` }],
              isError: true,
            },
          }
        : { steps: 0, stepMs: 0, result: text(`# ${args.path}\n\nHello from the mock file system.`) };
    case "list_allowed_directories":
      return { steps: 0, stepMs: 0, result: text("Allowed directories:\n/home/ada/projects") };
    default:
      return { steps: 0, stepMs: 0, result: text(`${tool}: ok (mock)`) };
  }
}

/** Two generations of stderr for a stdio server: the one that crashed and the current one. */
export function mockStderr(server: string, transport: Transport, generation: number): GenerationStderr[] {
  if (transport !== "stdio" || generation === 0) return [];
  const current: GenerationStderr = {
    generation,
    lines:
      server === "sqlite"
        ? ["sqlite-mcp 0.6.2 starting", "Error: database is locked: /home/ada/data/app.db", "    at open (db.js:41)"]
        : [`Secure MCP ${server} server running on stdio`, "Allowed directories: [ '/home/ada/projects' ]"],
    truncated: false,
  };
  if (generation === 1) return [current];
  const previous: GenerationStderr = {
    generation: generation - 1,
    lines: [
      ...Array.from({ length: 3 }, (_, i) => `[warn] slow request ${i + 1}: 812 ms (token=***)`),
      "FATAL: out of memory while indexing /home/ada/projects",
    ],
    truncated: true,
  };
  return [previous, current];
}

const PATH = ["/home/ada/.local/bin", "/usr/local/bin", "/usr/bin", "/bin"];

export function mockCommand(server: string, transport: Transport): ResolvedCommand | null {
  if (transport !== "stdio") return null;
  if (server === "sqlite") {
    return {
      command: "uvx",
      program: null,
      args: ["mcp-server-sqlite", "--db-path", "/home/ada/data/app.db"],
      cwd: null,
      path: PATH,
      path_source: "app",
      env_names: [],
      problem: `\`uvx\` was not found in PATH: ${PATH.join(", ")}; install it or give an absolute path in the config`,
    };
  }
  return {
    command: "npx",
    program: "/usr/local/bin/npx",
    args: ["-y", "@modelcontextprotocol/server-filesystem", "/home/ada/projects", "--token=***"],
    cwd: "/home/ada",
    path: PATH,
    path_source: "app",
    env_names: ["NODE_OPTIONS", "FS_API_TOKEN"],
    problem: null,
  };
}

/** The defaults of DESIGN.md, as every mock server runs with them. */
export function mockPolicy(): ServerPolicy {
  return {
    reconnect: true,
    initial_delay_ms: 500,
    max_delay_ms: 30_000,
    jitter_percent: 20,
    max_attempts: 10,
    quarantine_ms: [30_000, 60_000, 120_000],
    establish_ms: 60_000,
    request_ms: 60_000,
    ping_interval_ms: 30_000,
    ping_timeout_ms: 10_000,
    max_concurrent_calls: 4,
  };
}

export function mockConfig(server: string, transport: Transport, disabled: boolean): MaskedServerConfig {
  const command = mockCommand(server, transport);
  const head: MaskedServerConfig = command
    ? {
        type: "stdio",
        command: command.command,
        args: command.args,
        env: Object.fromEntries(command.env_names.map((n) => [n, "***"])),
        cwd: command.cwd,
      }
    : {
        type: transport,
        url: `https://mcp.${server}.example.com/mcp?token=***`,
        headers: { Authorization: "***" },
      };
  return {
    name: server,
    ...head,
    disabled,
    reconnect: { enabled: true, initialDelayMs: 500, maxDelayMs: 30000, maxAttempts: 10, quarantineMs: [30000, 60000, 120000] },
    timeouts: { establishMs: 60000, requestMs: 60000, pingIntervalMs: 30000, pingTimeoutMs: 10000 },
    maxConcurrentCalls: 4,
  };
}
