import { describe, expect, test } from "vitest";
import { Pending } from "./pending.svelte";

describe("Pending", () => {
  test("is busy while a command runs and resolves to its value", async () => {
    const p = new Pending();
    let release!: (v: number) => void;
    const run = p.run(() => new Promise<number>((r) => (release = r)));
    expect(p.busy).toBe(true);
    release(7);
    expect(await run).toBe(7);
    expect(p.busy).toBe(false);
    expect(p.error).toBeNull();
  });

  test("a failure resolves to null and says why; the next run clears it", async () => {
    const p = new Pending();
    expect(await p.run(() => Promise.reject({ kind: "serve", message: "port 7424 is in use" }))).toBeNull();
    expect(p.error).toMatchObject({ kind: "serve", message: "port 7424 is in use" });
    expect(p.busy).toBe(false);
    await p.run(async () => 1);
    expect(p.error).toBeNull();
  });

  test("an error the caller takes is not shown", async () => {
    const p = new Pending();
    const taken: string[] = [];
    const take = (e: { kind: string }) => e.kind === "changed_since" && taken.push(e.kind) > 0;
    expect(await p.run(() => Promise.reject({ kind: "changed_since", message: "asks" }), take)).toBeNull();
    expect(p.error).toBeNull();
    expect(taken).toEqual(["changed_since"]);
    await p.run(() => Promise.reject({ kind: "io", message: "denied" }), take);
    expect(p.error?.kind).toBe("io");
  });
});
