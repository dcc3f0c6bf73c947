// The tool pins' review in the detail panel (TrustReview), against the shell's recorded
// reviews and decisions (recorded/trust.json through the FakeHost's MockTrust).

import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import { describe, expect, test } from "vitest";
import { FakeHost } from "../test/fake-host";
import { view } from "../test/fixtures";
import TrustReview from "./TrustReview.svelte";

function show(server: string, held: number, fresh: number) {
  const host = new FakeHost([view(server)]);
  const r = render(TrustReview, { host, server, held, fresh });
  return { host, r };
}

describe("the review of held tools", () => {
  test("a changed tool shows its description word by word, its schema change and its flags", async () => {
    show("filesystem", 2, 0);
    await waitFor(() => expect(screen.getAllByTestId("trust-held")).toHaveLength(2));
    const held = screen.getAllByTestId("trust-held");
    expect(held.map((h) => h.dataset.tool)).toEqual(["delete_tree", "log"]);
    const e = held[1]!;
    const ins = within(e).getByTestId("trust-diff").querySelector("ins");
    expect(ins?.textContent).toContain("<IMPORTANT>");
    expect(within(e).getByTestId("trust-fields").textContent).toContain("inputSchema.properties.text.type");
    expect(within(e).getByTestId("trust-flags").textContent).toContain("Instructions to the model");
    expect(screen.getByTestId("trust-summary").textContent).toBe("2 tools changed");
  });

  test("Approve sends the decision and the review follows it; Approve all empties it", async () => {
    const { host } = show("filesystem", 2, 0);
    await waitFor(() => expect(screen.getAllByTestId("trust-held")).toHaveLength(2));
    const log = screen.getAllByTestId("trust-held").find((h) => h.dataset.tool === "log")!;
    await fireEvent.click(within(log).getByTestId("trust-approve"));
    expect(host.toolDecide).toHaveBeenCalledWith("filesystem", "approve", ["log"]);
    await waitFor(() => expect(screen.getAllByTestId("trust-held").map((h) => h.dataset.tool)).toEqual(["delete_tree"]));
    const remaining = screen.getByTestId("trust-held");
    await fireEvent.click(within(remaining).getByTestId("trust-reject"));
    expect(host.toolDecide).toHaveBeenLastCalledWith("filesystem", "reject", ["delete_tree"]);
    await waitFor(() => expect(screen.getByTestId("trust-rejected").textContent).toContain("delete_tree"));
    expect(screen.queryByTestId("trust-held")).toBeNull();
  });

  test("Approve all takes every change at once", async () => {
    const { host } = show("filesystem", 2, 0);
    await waitFor(() => expect(screen.getAllByTestId("trust-held")).toHaveLength(2));
    await fireEvent.click(screen.getByTestId("trust-approve-all"));
    expect(host.toolDecide).toHaveBeenCalledWith("filesystem", "approve", null);
    await waitFor(() => expect(screen.queryByTestId("trust")).toBeNull());
  });

  test("tools first seen are listed to look at once; nothing shows when nothing waits", async () => {
    show("sqlite", 0, 10);
    await waitFor(() => expect(screen.getAllByTestId("trust-first-seen")).toHaveLength(10));
    expect(screen.getByTestId("trust-summary").textContent).toBe("10 new tools");
    const { host } = show("github", 0, 0);
    await waitFor(() => expect(host.toolReview).toHaveBeenCalledWith("github"));
    await waitFor(() => expect(host.toolReview.mock.results[0]?.value).toBeDefined());
    await host.toolReview.mock.results[0]!.value;
    expect(screen.getAllByTestId("trust")).toHaveLength(1);
  });
});
