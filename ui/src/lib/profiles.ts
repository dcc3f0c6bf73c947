// The Profiles view's words and groupings, over what the shell answered (`ProfilesView`): each
// profile's tools by server, its counts and estimated tokens in words, and who uses it. Pure: no
// name, count or filter is worked out here; the shell's view (the core's preview) has them.

import type { FixedTool, ProfileView, ToolPreview } from "../host/types";

/** One tool as its switch shows it. */
export interface ToolRow {
  tool: ToolPreview;
  /** Why its switch cannot change it; null when it can. */
  fixed: string | null;
}

/** A server's tools in a profile, in the view's order. */
export interface ServerGroup {
  server: string;
  tools: ToolRow[];
  shown: number;
}

/** The profile's tools, grouped by server in the order the view lists them. */
export function groups(view: ProfileView): ServerGroup[] {
  const search = view.preview.search ? searchFixed() : null;
  const fixedOf = (t: ToolPreview) =>
    search ?? view.fixed.find((f: FixedTool) => f.server === t.server && f.tool === t.tool)?.why ?? null;
  const out: ServerGroup[] = [];
  for (const tool of view.preview.tools) {
    let group = out[out.length - 1];
    if (group?.server !== tool.server) {
      group = { server: tool.server, tools: [], shown: 0 };
      out.push(group);
    }
    group.tools.push({ tool, fixed: fixedOf(tool) });
    if (tool.shown) group.shown += 1;
  }
  return out;
}

/** Why no switch of a search-mode profile works (the shell refuses them alike). */
export function searchFixed(): string {
  return 'search mode ("tools": "search") has no per-tool filters: a host can find every tool of its servers';
}

/** An estimate of tokens in words: "≈ 840 tokens", "≈ 12.3k tokens". */
export function tokensText(n: number): string {
  const value = n < 1000 ? String(n) : n < 100_000 ? `${(n / 1000).toFixed(1)}k` : `${Math.round(n / 1000)}k`;
  return `≈ ${value} tokens`;
}

/** "1 tool", "12 tools". */
export function toolsText(n: number): string {
  return `${n} ${n === 1 ? "tool" : "tools"}`;
}

/** What the host is given, in one line: the list's size and cost, or, in search mode, the
 * meta-tools' cost against the full list's. */
export function summary(view: ProfileView): string {
  const p = view.preview;
  const shown = p.tools.filter((t) => t.shown).length;
  if (p.search) {
    return `search mode: ${toolsText(p.listed)} to find and call ${toolsText(shown)}, ${tokensText(p.tokens)} instead of ${tokensText(p.full_tokens)}`;
  }
  return `${toolsText(p.listed)}, ${tokensText(p.tokens)}`;
}

/** Who uses the profile, in words; an empty list when nobody does that the app can tell. */
export function users(view: ProfileView, unbound: string[]): string[] {
  const out: string[] = [];
  if (view.attached > 0) {
    out.push(`${view.attached} ${view.attached === 1 ? "host" : "hosts"} attached through the app now`);
  }
  if (view.tokens.length > 0) out.push(`HTTP token bound to it: ${view.tokens.join(", ")}`);
  if (unbound.length > 0) out.push(`HTTP token that opens any profile: ${unbound.join(", ")}`);
  return out;
}
