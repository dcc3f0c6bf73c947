// The dashboard's state: a snapshot, then every event in `seq` order, exactly once. A gap in
// `seq` means events were lost (the shell's buffer overflowed, the page slept): the store
// re-reads the snapshot and goes on from the events after it. Commands go through here so
// their errors become one readable banner each.

import { type Host, toCommandError } from "../host/index";
import type { Event, ServerView } from "../host/types";
import { type ActivityItem, activityItem, MAX_ACTIVITY, pushActivity } from "./activity";
import { HistoryStore } from "./history.svelte";
import { applyEvent, markGap, newModel, replaceView, type ServerModel } from "./model";

/** connecting: first snapshot pending; live; resyncing: re-reading after a gap; offline: the host failed. */
export type SyncState = "connecting" | "live" | "resyncing" | "offline";

export type Command = "reconnect" | "reset" | "disable" | "enable";

/** A sign-in from this dashboard: waiting for the person in the browser, or failed (why). */
export type SignInFlow = { phase: "waiting" } | { phase: "failed"; message: string };

export interface Banner {
  id: number;
  /** error: a command failed; warn: a notice that something is off; info: everything else. */
  tone: "error" | "warn" | "info";
  /** What was being done: "Reset sqlite", or a notice's headline. */
  title: string;
  /** The CommandError's kind (errors only). */
  kind?: string;
  message: string;
  /** The CommandError's Retry-After, when it had one. */
  retryAfterMs?: number;
  /** The `app_info` notice kind this banner shows (lib/notices.ts). */
  notice?: string;
  /** Follows the servers' state, so it cannot be dismissed (the offline banner). */
  live?: boolean;
}

const COMMAND_TITLE: Record<Command, string> = {
  reconnect: "Reconnect",
  reset: "Reset",
  disable: "Disable",
  enable: "Enable",
};

export class DashboardStore {
  /** By server name. */
  servers: Record<string, ServerModel> = $state({});
  /** Server names in the order the shell lists them (the config's). */
  names: string[] = $state([]);
  sync: SyncState = $state("connecting");
  /** How many times lost events forced a re-snapshot. */
  resyncs = $state(0);
  banners: Banner[] = $state([]);
  /** Latest transitions and failures across servers, newest first. */
  activity: ActivityItem[] = $state.raw([]);
  /** Commands in flight, by server: their buttons show it and stay disabled. */
  inFlight: Record<string, Command | "reconnect_all_failed" | "sign_out"> = $state({});
  /** Sign-ins started here, by server, until they succeed (then the server reconnects). */
  signIns: Record<string, SignInFlow> = $state({});

  readonly host: Host;
  /** Earlier runs, shown beside the live state and never applied to it. */
  readonly history: HistoryStore;
  #lastSeq: number | null = null;
  #buffer: Event[] | null = null;
  #unsubscribe: (() => void) | null = null;
  #nextBanner = 1;
  #lastEvent = new Map<string, Event>();
  #resync: Promise<void> | null = null;
  /** Applying the events held during a snapshot: a server missing from it is gone, not new. */
  #afterSnapshot = false;

  constructor(host: Host) {
    this.host = host;
    this.history = new HistoryStore(host);
  }

  /** Subscribe first and hold events, then snapshot, then apply what was held: nothing falls between. */
  async start(): Promise<void> {
    void this.history.load();
    this.#buffer = [];
    try {
      this.#unsubscribe = await this.host.subscribe((e) => this.receive(e));
    } catch (e) {
      this.#buffer = null;
      this.sync = "offline";
      this.error("Subscribe to events", e);
      return;
    }
    await this.resnapshot();
  }

  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
  }

  /** One event from the host. */
  receive(e: Event): void {
    if (this.#buffer) {
      this.#buffer.push(e);
      return;
    }
    this.#ingest(e);
  }

  #ingest(e: Event): void {
    const last = this.#lastSeq;
    if (last !== null && e.seq <= last) return; // already applied (a replay, or a duplicate)
    if (last !== null && e.seq > last + 1) {
      for (const m of Object.values(this.servers)) markGap(m, e.at, last, e.seq);
      this.#buffer = [e];
      void this.resnapshot();
      return;
    }
    const model = this.servers[e.server];
    if (!model) {
      if (this.#afterSnapshot) {
        this.#lastSeq = e.seq; // not in the snapshot just read: removed since; nothing to draw
        return;
      }
      // A server the last snapshot did not list (the config changed): read it again.
      this.#buffer = [e];
      void this.resnapshot();
      return;
    }
    this.#lastSeq = e.seq;
    applyEvent(model, e);
    if (e.type === "state" || e.type === "failure") {
      const item = activityItem(e, this.#lastEvent.get(e.server));
      this.#lastEvent.set(e.server, e);
      if (item) this.activity = pushActivity(this.activity, item, MAX_ACTIVITY);
    } else if (e.type === "auth" || e.type.startsWith("host_")) {
      // Signed in some other way (`lifeline login`, another window): an old error is moot.
      if (e.type === "auth" && e.auth.signed_in && this.signIns[e.server]?.phase === "failed") delete this.signIns[e.server];
      const item = activityItem(e, undefined);
      if (item) this.activity = pushActivity(this.activity, item, MAX_ACTIVITY);
    }
  }

  /** Re-reads every server, then applies the events held meanwhile, in `seq` order. */
  resnapshot(): Promise<void> {
    this.#resync ??= this.#resnapshot().finally(() => {
      this.#resync = null;
    });
    return this.#resync;
  }

  async #resnapshot(): Promise<void> {
    this.#buffer ??= [];
    // Loops while the held events themselves had a gap (that set a new buffer).
    while (this.#buffer) {
      if (this.#lastSeq !== null) {
        this.sync = "resyncing";
        this.resyncs += 1;
      }
      let views: ServerView[];
      try {
        views = await this.host.snapshot();
      } catch (e) {
        this.#buffer = null;
        this.sync = "offline";
        this.error("Read the servers' state", e);
        return;
      }
      this.#applySnapshot(views);
      const held = this.#buffer.sort((a, b) => a.seq - b.seq);
      this.#buffer = null;
      // The snapshot stands in for whatever was lost: the held events continue from it.
      if (held.length > 0 && (this.#lastSeq === null || held[0]!.seq > this.#lastSeq + 1)) {
        this.#lastSeq = held[0]!.seq - 1;
      }
      this.sync = "live";
      this.#afterSnapshot = true;
      try {
        for (const e of held) this.receive(e);
      } finally {
        this.#afterSnapshot = false;
      }
    }
  }

  #applySnapshot(views: ServerView[]): void {
    const names: string[] = [];
    const next: Record<string, ServerModel> = {};
    for (const view of views) {
      names.push(view.server);
      const existing = this.servers[view.server];
      if (existing) {
        replaceView(existing, view);
        next[view.server] = existing;
      } else {
        next[view.server] = newModel(view);
      }
    }
    this.servers = next;
    this.names = names;
  }

  // ## Commands

  async command(command: Command, server: string): Promise<void> {
    this.inFlight[server] = command;
    try {
      await this.host[command](server);
    } catch (e) {
      this.error(`${COMMAND_TITLE[command]} ${server}`, e);
    } finally {
      delete this.inFlight[server];
    }
  }

  /** Opens the browser at the server's authorization server and waits for the person; the
   * flow's state is `signIns[server]` (waiting, then gone on success or failed with why). */
  async signIn(server: string): Promise<void> {
    if (this.signIns[server]?.phase === "waiting") return;
    this.signIns[server] = { phase: "waiting" };
    try {
      const auth = await this.host.signIn(server);
      const model = this.servers[server];
      if (model) model.view.auth = auth;
      delete this.signIns[server];
    } catch (e) {
      // Kept by the server (its Sign-in section shows it) and a banner, since Sign in on a
      // row leaves no detail open to show it in.
      this.signIns[server] = { phase: "failed", message: toCommandError(e).message };
      this.error(`Sign in to ${server}`, e);
    }
  }

  /** Forgets the server's sign-in; it then reconnects and needs a new one. */
  async signOut(server: string): Promise<void> {
    this.inFlight[server] = "sign_out";
    delete this.signIns[server];
    try {
      await this.host.signOut(server);
    } catch (e) {
      this.error(`Sign out of ${server}`, e);
    } finally {
      delete this.inFlight[server];
    }
  }

  async reconnectAllFailed(): Promise<string[]> {
    this.inFlight["*"] = "reconnect_all_failed";
    try {
      const names = await this.host.reconnectAllFailed();
      this.info(
        "Reconnect all failed",
        names.length === 0
          ? "No server is failing."
          : `Reconnecting ${names.length} ${names.length === 1 ? "server" : "servers"}: ${names.join(", ")}.`,
      );
      return names;
    } catch (e) {
      this.error("Reconnect all failed", e);
      return [];
    } finally {
      delete this.inFlight["*"];
    }
  }

  // ## Banners

  error(title: string, e: unknown): void {
    const { kind, message, retry_after_ms } = toCommandError(e);
    this.#banner({ tone: "error", title, kind, message, ...(retry_after_ms !== undefined && { retryAfterMs: retry_after_ms }) });
  }

  info(title: string, message: string): void {
    // One info line at a time: the newest replaces the last.
    this.banners = this.banners.filter((b) => b.tone !== "info");
    this.#banner({ tone: "info", title, message });
  }

  dismiss(id: number): void {
    this.banners = this.banners.filter((b) => b.id !== id);
  }

  #banner(b: Omit<Banner, "id">): void {
    this.banners = [...this.banners.slice(-4), { id: this.#nextBanner++, ...b }];
  }
}
