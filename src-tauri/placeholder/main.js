// Lists the servers through the same commands the real UI uses (snapshot, subscribe,
// app_info), so the placeholder is also a smoke test of the IPC. withGlobalTauri is on
// for this page only (build.rs).
const { invoke, Channel } = window.__TAURI__.core;

const rows = new Map();
let lastSeq = 0;

function text(tag, value, cls) {
  const el = document.createElement(tag);
  el.textContent = value ?? "";
  if (cls) el.className = cls;
  return el;
}

function describe(v) {
  let s = v.state ?? "starting";
  if (v.stage) s += ` (${v.stage})`;
  if (v.reason) s += ` - ${v.reason}`;
  if (v.attempt && v.max_attempts) s += ` ${v.attempt}/${v.max_attempts}`;
  return s;
}

function draw() {
  const body = document.getElementById("servers");
  body.replaceChildren(
    ...[...rows.values()].map((v) => {
      const tr = document.createElement("tr");
      tr.className = v.state ?? "starting";
      tr.append(
        text("td", v.server),
        text("td", v.transport),
        text("td", describe(v), "state"),
        text("td", `#${v.generation}`),
        text("td", String(v.restarts)),
        text("td", String(v.tools.length)),
        text("td", v.cause?.message ?? ""),
      );
      return tr;
    }),
  );
  document.getElementById("status").textContent = `last event #${lastSeq}`;
}

async function refresh() {
  for (const v of await invoke("snapshot")) rows.set(v.server, v);
  draw();
}

async function main() {
  const info = await invoke("app_info");
  document.getElementById("notices").replaceChildren(
    ...info.notices.map((n) => text("li", n.message, n.kind)),
  );
  const pending = [];
  let ready = false;
  const channel = new Channel();
  channel.onmessage = (event) => {
    if (!ready) return pending.push(event);
    apply(event);
  };
  function apply(event) {
    const gap = lastSeq && event.seq !== lastSeq + 1;
    lastSeq = event.seq;
    if (gap) return refresh();
    const v = rows.get(event.server);
    if (!v) return;
    if (event.generation > v.generation) {
      v.restarts += event.generation - v.generation;
      v.generation = event.generation;
    }
    if (event.type === "state") {
      for (const k of ["state", "stage", "attempt", "max_attempts", "reason", "cause"]) v[k] = event[k];
    } else if (event.type === "tools") {
      v.tools = event.names;
    }
    draw();
  }
  for (const v of await invoke("subscribe", { channel })) rows.set(v.server, v);
  ready = true;
  pending.splice(0).forEach(apply);
  draw();
}

main().catch((e) => {
  document.getElementById("status").textContent = `error: ${e.kind ?? ""} ${e.message ?? e}`;
});
