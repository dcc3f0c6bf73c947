// The mock host's diagnostic bundle: the same layout and manifest as the shell's
// (docs/bundle.md), built from the simulated servers and their events, so the preview dialog
// can be developed and tested in a browser. The mock holds no secrets; its config shows the
// masks the real one would.

import type { BundleFile, BundlePreview, Event, ServerView } from "./types";

const encoder = new TextEncoder();

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function file(path: string, content: string): Promise<BundleFile> {
  return { path, size: encoder.encode(content).length, sha256: await sha256(content), content };
}

const pretty = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;
const jsonl = (vs: unknown[]) => vs.map((v) => `${JSON.stringify(v)}\n`).join("");

/** What a redacted config looks like: header and env values, userinfo and query values masked. */
function mockConfig(views: ServerView[]): unknown {
  const servers: Record<string, unknown> = {};
  for (const v of views) {
    servers[v.server] =
      v.transport === "stdio"
        ? { command: "npx", args: ["-y", `@example/${v.server}`, "--token=***"], env: { API_TOKEN: "***" } }
        : { url: `https://${v.server}.example/mcp?key=***`, headers: { Authorization: "***" } };
  }
  return { mcpServers: servers };
}

export async function mockBundle(views: ServerView[], events: readonly Event[], now: number): Promise<BundlePreview> {
  const files: BundleFile[] = [await file("config.redacted.json", pretty(mockConfig(views)))];
  for (const v of views) {
    const mine = events.filter((e) => e.server === v.server);
    const dir = `servers/${v.server.replace(/[^A-Za-z0-9._-]/g, "_")}`;
    files.push(await file(`${dir}/state.json`, pretty(v)));
    files.push(await file(`${dir}/events.jsonl`, jsonl(mine)));
    files.push(await file(`${dir}/failures.jsonl`, jsonl(mine.flatMap((e) => (e.type === "failure" ? [e.failure] : [])))));
    if (v.transport === "stdio" && mine.some((e) => e.type === "failure")) {
      files.push(await file(`${dir}/stderr-gen-${v.generation}.txt`, `${v.server}: starting (mock)\nAuthorization: Bearer ***\n`));
    }
  }
  files.push(await file("logs/tail.log", "==> lifeline-app.log <==\nINFO lifeline-app starting (mock host)\n"));
  const id = (await sha256(`${now}${files.map((f) => f.sha256).join("")}`)).slice(0, 16);
  const manifest = {
    format_version: 1,
    diagnostics_id: id,
    created: new Date(now).toISOString().replace(/\.\d{3}Z$/, "Z"),
    app: { name: "lifeline-app", version: "mock" },
    core_version: "mock",
    os: { name: "browser", family: "mock", arch: "mock" },
    limit_bytes: 5 * 1024 * 1024,
    truncated: false,
    dropped_oldest: [],
    redactions: { env_value: views.length, header_value: views.length, secret_argument: 1 },
    files: files.map(({ path, size, sha256 }) => ({ path, size, sha256 })),
  };
  files.unshift(await file("manifest.json", pretty(manifest)));
  return {
    diagnostics_id: id,
    files,
    total_bytes: files.reduce((n, f) => n + f.size, 0),
    default_path: `/home/ada/Downloads/lifeline-diagnostics-${id}.zip`,
  };
}
