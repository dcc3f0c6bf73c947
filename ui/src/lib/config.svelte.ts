// The config side of the dashboard: the file's servers as editor forms, the editor that is
// open (add or edit one server), the first-run import offer, and the app's info (mode and
// notices). Every change — the editor's, an import, the file edited on disk — arrives as the
// host's `config_changed`, on which the server list is re-read: servers appear and vanish.

import { getContext, hasContext, setContext } from "svelte";
import { toCommandError } from "../host/index";
import type {
  AppInfo,
  ConfigError,
  DetectedClient,
  FieldError,
  ImportOutcome,
  ServerForm,
} from "../host/types";
import type { DashboardStore } from "./store.svelte";

/** The editor: adding a server, or editing the one called `name`. */
export type Editing = { mode: "add"; form: ServerForm } | { mode: "edit"; name: string; form: ServerForm };

export function blankForm(): ServerForm {
  return { name: "", transport: "stdio", command: "", args: [], env: [], cwd: null, url: "", headers: [], disabled: false };
}

/** A rejection as a ConfigError: `{kind, message}` and, when the shell named them, the fields. */
export function toConfigError(e: unknown): ConfigError {
  const error: ConfigError = toCommandError(e);
  const fields = (e as { fields?: unknown } | null)?.fields;
  if (Array.isArray(fields)) {
    error.fields = fields.filter(
      (f): f is FieldError => typeof f?.field === "string" && typeof f?.message === "string",
    );
  }
  return error;
}

export class ConfigStore {
  info: AppInfo | null = $state(null);
  /** The file's servers, secrets masked, in file order. */
  forms: ServerForm[] = $state([]);
  /** Other clients' configs found on this machine (read in demo mode, for the import offer). */
  detected: DetectedClient[] = $state([]);
  editing: Editing | null = $state(null);
  /** Why the open editor's last save was refused. */
  error: ConfigError | null = $state(null);
  /** A save, remove or import in flight. */
  busy = $state(false);
  /** The person chose to keep the demo: the import offer is not shown again this session. */
  keepDemo = $state(false);
  /** The import offer opened from the toolbar (with a config of one's own). */
  importOpen = $state(false);

  readonly dashboard: DashboardStore;
  #unlisten: (() => void) | null = null;
  #onInfo: (info: AppInfo) => void;

  constructor(dashboard: DashboardStore, onInfo: (info: AppInfo) => void = () => {}) {
    this.dashboard = dashboard;
    this.#onInfo = onInfo;
  }

  get host() {
    return this.dashboard.host;
  }

  get demo(): boolean {
    return this.info?.mode === "demo";
  }

  /** Reads the info and the file, and follows every change from now on. */
  async start(): Promise<void> {
    try {
      this.#unlisten = await this.host.onConfigChanged((info) => void this.changed(info));
    } catch {
      // A host without config events: the list is still re-read after the UI's own changes.
    }
    try {
      this.#setInfo(await this.host.appInfo());
    } catch {
      return; // a shell without `app_info`: nothing to edit against
    }
    await this.refresh();
  }

  stop(): void {
    this.#unlisten?.();
    this.#unlisten = null;
  }

  /** The config changed (here or on disk): new info, the list and the forms read again. */
  async changed(info: AppInfo): Promise<void> {
    this.#setInfo(info);
    await Promise.all([this.dashboard.resnapshot(), this.refresh()]);
  }

  async refresh(): Promise<void> {
    try {
      this.forms = (await this.host.configGet()).servers;
      this.detected = this.demo || this.importOpen ? await this.host.importDetect() : [];
    } catch (e) {
      this.dashboard.error("Read the config", e);
    }
  }

  form(name: string): ServerForm | undefined {
    return this.forms.find((f) => f.name === name);
  }

  openAdd(): void {
    this.error = null;
    this.editing = { mode: "add", form: blankForm() };
  }

  openEdit(name: string): void {
    const form = this.form(name);
    if (!form) {
      this.dashboard.error(`Edit ${name}`, { kind: "unknown_server", message: `\`${name}\` is not in the config file (the demo's servers cannot be edited).` });
      return;
    }
    this.error = null;
    this.editing = { mode: "edit", name, form: structuredClone($state.snapshot(form)) };
  }

  close(): void {
    this.editing = null;
    this.error = null;
  }

  /** Moves a typed header or env value into the keychain as the secret `name` (docs/secrets.md)
   * and returns the `${keyring:NAME}` reference to put in its place; null (with the error
   * shown) when it could not be stored. The UI never reads a secret back. */
  async moveToKeychain(name: string, value: string): Promise<string | null> {
    try {
      const store = await this.host.secretSet(name, value);
      if (store.notice) this.dashboard.info("Stored in a file", store.notice);
    } catch (e) {
      this.dashboard.info("Not stored", toCommandError(e).message);
      return null;
    }
    return `\${keyring:${name}}`;
  }

  /** Saves the open editor's form; on refusal keeps it open with the fields named. */
  async save(form: ServerForm): Promise<boolean> {
    const editing = this.editing;
    if (!editing) return false;
    this.busy = true;
    try {
      if (editing.mode === "add") await this.host.serverAdd(form);
      else await this.host.serverEdit(editing.name, form);
    } catch (e) {
      this.error = toConfigError(e);
      return false;
    } finally {
      this.busy = false;
    }
    this.close();
    this.dashboard.info(editing.mode === "add" ? "Added" : "Saved", `${form.name}: saved to the config file.`);
    await this.#afterWrite();
    return true;
  }

  async remove(name: string): Promise<boolean> {
    this.busy = true;
    try {
      await this.host.serverRemove(name);
    } catch (e) {
      this.dashboard.error(`Remove ${name}`, e);
      return false;
    } finally {
      this.busy = false;
    }
    this.dashboard.info("Removed", `${name}: removed from the config file.`);
    await this.#afterWrite();
    return true;
  }

  /** Imports every server of one client's config; conflicts are reported, never overwritten. */
  /** The import offer on demand: other clients' configs, read now. */
  async openImport(): Promise<void> {
    this.importOpen = true;
    try {
      this.detected = await this.host.importDetect();
    } catch (e) {
      this.dashboard.error("Look for other clients' configs", e);
    }
  }

  /** Whether the import offer shows: on first run (the demo), or when asked for. */
  get offering(): boolean {
    return (this.demo && !this.keepDemo) || this.importOpen;
  }

  async importFrom(source: string): Promise<ImportOutcome | null> {
    this.busy = true;
    let outcome: ImportOutcome;
    try {
      outcome = await this.host.importApply([{ source }]);
    } catch (e) {
      this.dashboard.error("Import", e);
      return null;
    } finally {
      this.busy = false;
    }
    this.dashboard.info("Import", importSummary(outcome));
    await this.#afterWrite();
    return outcome;
  }

  /** The host also says `config_changed`; reading here too keeps a host without events right. */
  async #afterWrite(): Promise<void> {
    try {
      this.#setInfo(await this.host.appInfo());
    } catch {
      // keep the info we have
    }
    await Promise.all([this.dashboard.resnapshot(), this.refresh()]);
  }

  #setInfo(info: AppInfo): void {
    this.info = info;
    this.#onInfo(info);
  }
}

/** "Added 2 servers: a, b. Not imported: c (already configured)." */
export function importSummary(o: ImportOutcome): string {
  const parts: string[] = [];
  parts.push(o.added.length === 0 ? "No server was added." : `Added ${o.added.length} ${o.added.length === 1 ? "server" : "servers"}: ${o.added.join(", ")}.`);
  if (o.conflicts.length > 0) parts.push(`Already configured, kept as they were: ${o.conflicts.map((c) => c.name).join(", ")}.`);
  if (o.disabled.length > 0) parts.push(`Added disabled (see their settings): ${o.disabled.map((c) => c.name).join(", ")}.`);
  if (o.skipped.length > 0) parts.push(`Skipped: ${o.skipped.map((c) => `${c.name} (${c.reason})`).join("; ")}.`);
  return parts.join(" ");
}

const CONTEXT = Symbol("lifeline-config");

/** Makes `store` the config store of the components below (App sets it). */
export function setConfigContext(store: ConfigStore): void {
  setContext(CONTEXT, store);
}

/** The config store, when the app provides one (a component rendered alone gets none). */
export function configContext(): ConfigStore | undefined {
  return hasContext(CONTEXT) ? getContext<ConfigStore>(CONTEXT) : undefined;
}
