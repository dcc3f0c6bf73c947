// Entry point: pick the host (Tauri or mock), start the store, mount the dashboard.

import { mount } from "svelte";
import "./app.css";
import App from "./App.svelte";
import { connectHost } from "./host/index";
import { DashboardStore } from "./lib/store.svelte";
import { applyTheme, loadTheme } from "./lib/theme";

applyTheme(loadTheme());

const host = await connectHost();
const store = new DashboardStore(host);
const params = new URLSearchParams(location.search);

mount(App, {
  target: document.getElementById("app")!,
  props: { store, initialSelection: params.get("select") },
});

// The first frame with the dashboard in it: a rAF callback runs before the frame it belongs to
// is painted, so the one it schedules runs after that frame reached the screen.
requestAnimationFrame(() => requestAnimationFrame(() => void host.painted().catch(() => {})));

// Tests and the console reach the host and the store here (the mock records every command).
(window as unknown as { __lifeline: unknown }).__lifeline = { host, store };

void store.start();
