import { describe, expect, test } from "vitest";
import { ManualClock, T0 } from "../test/fixtures";
import { MockHost } from "./mock";
import { form } from "./mock-config";

const names = async (m: MockHost) => (await m.snapshot()).map((v) => v.server);

describe("the mock host's config", () => {
  test("shows the forms the shell recorded, secrets masked; *** sent back keeps them", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const github = (await m.configGet()).servers.find((s) => s.name === "github")!;
    expect(github.headers).toEqual([{ key: "Authorization", value: "***" }]);
    await m.serverEdit("github", { ...github, disabled: true });
    const again = (await m.configGet()).servers.find((s) => s.name === "github")!;
    expect(again).toMatchObject({ disabled: true, headers: [{ key: "Authorization", value: "***" }] });
    expect(JSON.stringify(await m.configGet())).not.toContain("mock-github-token");
  });

  test("add, edit and remove change the servers; refusals name the field", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    const changes: string[] = [];
    await m.onConfigChanged((i) => changes.push(i.mode));
    await m.serverAdd(form("notes", { command: "notes-mcp" }));
    expect(await names(m)).toEqual(["filesystem", "github", "linear", "sqlite", "notes"]);
    await expect(m.serverAdd(form("notes", { command: "x" }))).rejects.toMatchObject({
      kind: "config",
      fields: [{ field: "name" }],
    });
    await expect(m.serverAdd(form("web", { transport: "http", url: "ftp://x" }))).rejects.toMatchObject({
      fields: [{ field: "url", message: "must be an http:// or https:// URL, not ftp:" }],
    });
    await m.serverRemove("linear");
    expect(await names(m)).toEqual(["filesystem", "github", "sqlite", "notes"]);
    expect(changes).toEqual(["config", "config"]);
  });

  test("an edit the shell's recording does not hold is refused, saying how to record it", async () => {
    const m = new MockHost({ clock: new ManualClock(T0) });
    await expect(m.serverAdd(form("unrecorded", { command: "x" }))).rejects.toMatchObject({
      kind: "config",
      message: expect.stringMatching(/no recording of this new server.*make recording/),
    });
    expect(await names(m)).toEqual(["filesystem", "github", "linear", "sqlite"]);
  });

  test("in demo mode the first import ends the demo; a second reports conflicts", async () => {
    const m = new MockHost({ clock: new ManualClock(T0), notices: ["demo"] });
    expect((await m.configGet()).servers).toEqual([]);
    const found = await m.importDetect();
    expect(found.map((d) => [d.source, d.servers.length])).toEqual([
      ["claude_desktop", 3],
      ["cursor", 1],
    ]);
    const outcome = await m.importApply([{ source: "claude_desktop" }]);
    expect(outcome.added).toEqual(["filesystem", "memory", "brave-search"]);
    expect((await m.appInfo()).mode).toBe("config");
    expect(await names(m)).toEqual(["filesystem", "memory", "brave-search"]);
    const again = await m.importApply([{ source: "claude_desktop" }, { source: "cursor" }]);
    expect(again.added).toEqual(["linear"]);
    expect(again.conflicts.map((c) => c.name)).toEqual(["filesystem", "memory", "brave-search"]);
  });
});
