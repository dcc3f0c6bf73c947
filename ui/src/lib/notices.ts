// The shell's notices (`app_info`): shown once, at start, as calm banners the person can
// dismiss. `demo` is informational; everything else is a warning with the shell's message.

import type { AppInfo, Notice, ServerView } from "../host/types";
import type { Banner } from "./store.svelte";

const WARNING_TITLE: Record<string, string> = {
  fixture_missing: "Demo fixture missing",
  fixture_failed: "Demo fixture failed",
  config: "Config not used",
  history_corrupt: "History started anew",
  history_locked: "History not kept",
  history_unavailable: "History not kept",
};

/** Where to add servers; the config path when the shell said which file it looked for. */
function demoMessage(configPath: string | null): string {
  const where = configPath ?? "the config file (~/.config/lifeline/config.json)";
  return `These are built-in fixture servers that show each way a connection fails. Add your own with “+ Add server”, or import another client's servers; they are saved to ${where}.`;
}

/** One banner (without its id) for one notice. */
export function noticeBanner(notice: Notice, info: Pick<AppInfo, "config_path">): Omit<Banner, "id"> {
  if (notice.kind === "demo") {
    return { tone: "info", notice: notice.kind, title: "Demo mode", message: demoMessage(info.config_path) };
  }
  return {
    tone: "warn",
    notice: notice.kind,
    title: WARNING_TITLE[notice.kind] ?? "Notice",
    message: notice.message,
  };
}

/** Every notice of the app's info, as banners with ids -1, -2, …: never one of the store's (1 up). */
export function noticeBanners(info: AppInfo): Banner[] {
  return info.notices.map((n, i) => ({ id: -(i + 1), ...noticeBanner(n, info) }));
}

/**
 * One banner while remote servers wait for the network (their state's reason is `offline`:
 * the OS said the network is gone, and their failures are not counted). Id 0, between the
 * notices' and the store's; `live`: it goes when they stop waiting, not when dismissed.
 */
export function offlineBanner(views: readonly ServerView[]): Banner | null {
  const n = views.filter((v) => v.reason === "offline").length;
  if (n === 0) return null;
  return {
    id: 0,
    tone: "info",
    notice: "offline",
    live: true,
    title: `Offline: ${n} remote ${n === 1 ? "server is" : "servers are"} waiting for the network`,
    message: "They reconnect when it is back, and nothing counts against their retry budget meanwhile.",
  };
}
