// The Profiles view's words and groupings, over what the shell answered (`ProfilesView`): each
// profile's tools by server, its counts and estimated tokens in words, and who uses it. Pure: no
// name, count or filter is worked out here; the shell's view (the core's preview) has them.

import type { FixedTool, ProfileView, ToolPreview } from "../host/types";

/** The host kind of the shell's own names: one Lifeline cannot identify (the strictest). */
export const ANY_HOST = "unknown";

/** The hosts a profile's names can be shown for: any host (the shell's `preview`) first, then
 * each host Lifeline knows the limits of, in the shell's order; one whose client file serves
 * the profile says so. */
export function hostChoices(view: ProfileView): { client: string; label: string }[] {
  const using = new Set(view.clients.map((c) => c.client));
  return [
    { client: ANY_HOST, label: "Any host (the shortest names)" },
    ...view.hosts.map((h) => ({ client: h.client, label: using.has(h.client) ? `${h.label} (uses it)` : h.label })),
  ];
}

/** The profile as host `client` would be given it: the shell's view with that host's names,
 * counts and limit (`hosts`) in place of any host's; the view itself for `ANY_HOST` or a host
 * the shell did not answer for. */
export function atHost(view: ProfileView, client: string): ProfileView {
  const host = view.hosts.find((h) => h.client === client);
  if (!host) return view;
  const renamed = new Map(host.renamed.map((r) => [`${r.server}\u0000${r.tool}`, r]));
  const tools = view.preview.tools.map((t) => {
    const r = renamed.get(`${t.server}\u0000${t.tool}`);
    return r ? { ...t, name: r.name, changed: r.changed } : t;
  });
  const { budget, listed, tokens, limit, over_limit } = host;
  return { ...view, preview: { ...view.preview, client, budget, listed, tokens, limit, over_limit, tools } };
}

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

/** The chosen host's limits in one line: "Names of at most 46 characters; at most 40 tools". */
export function limits(view: ProfileView): string {
  const p = view.preview;
  const tools = p.limit === null ? "no tool limit known" : `at most ${p.limit} tools`;
  return `Names of at most ${p.budget} characters; ${tools}`;
}

/** Who uses the profile, in words; an empty list when nobody does that the app can tell. */
export function users(view: ProfileView, unbound: string[]): string[] {
  const out: string[] = view.clients.map((c) => `${c.label}: ${c.field} in ${c.path}`);
  if (view.attached.length > 0) {
    const named = view.attached.map((n) => n ?? "a host that has not said its name yet");
    out.push(`Attached through the app now: ${named.join(", ")}`);
  }
  if (view.tokens.length > 0) out.push(`HTTP token bound to it: ${view.tokens.join(", ")}`);
  if (unbound.length > 0) out.push(`HTTP token that opens any profile: ${unbound.join(", ")}`);
  return out;
}
