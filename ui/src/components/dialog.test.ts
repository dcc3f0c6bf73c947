import { fireEvent, render, screen } from "@testing-library/svelte";
import { createRawSnippet } from "svelte";
import { afterEach, describe, expect, test, vi } from "vitest";
import Dialog from "./Dialog.svelte";

const content = createRawSnippet(() => ({
  render: () =>
    `<div><input data-testid="inner-input" /><button disabled>Off</button><button data-testid="inner-last">Go</button></div>`,
}));

const openers: HTMLElement[] = [];

/** A button outside the dialog that has focus when it opens, as the toolbar's opener would. */
function opener(): HTMLButtonElement {
  const b = document.createElement("button");
  b.textContent = "Open";
  document.body.append(b);
  openers.push(b);
  b.focus();
  return b;
}

afterEach(() => {
  for (const b of openers.splice(0)) b.remove();
});

describe("Dialog", () => {
  test("is a modal dialog named by its title, and focus moves into it", () => {
    const open = opener();
    render(Dialog, { title: "Export diagnostics", name: "bundle", onclose: () => {}, children: content });
    const box = screen.getByRole("dialog");
    expect(box.getAttribute("aria-modal")).toBe("true");
    expect(box.dataset.testid).toBe("bundle-dialog");
    const title = document.getElementById(box.getAttribute("aria-labelledby")!);
    expect(title?.textContent).toBe("Export diagnostics");
    expect(screen.getByRole("dialog", { name: "Export diagnostics" })).toBe(box);
    expect(document.activeElement).toBe(box);
    expect(document.activeElement).not.toBe(open);
  });

  test("a field marked autofocus gets the focus instead of the box", () => {
    opener();
    const withField = createRawSnippet(() => ({
      render: () => `<div><button>First</button><input autofocus data-testid="auto" /></div>`,
    }));
    render(Dialog, { title: "Add a server", name: "editor", onclose: () => {}, children: withField });
    expect(document.activeElement).toBe(screen.getByTestId("auto"));
  });

  test("Tab from the last control wraps to the first, Shift+Tab from the first to the last", async () => {
    render(Dialog, { title: "T", name: "t", onclose: () => {}, children: content });
    const first = screen.getByTestId("t-close");
    const last = screen.getByTestId("inner-last");
    last.focus();
    await fireEvent.keyDown(last, { key: "Tab" });
    expect(document.activeElement).toBe(first);
    await fireEvent.keyDown(first, { key: "Tab", shiftKey: true });
    expect(document.activeElement).toBe(last);
    // From the box itself (where focus lands on opening), Shift+Tab goes to the last control too.
    const box = screen.getByRole("dialog");
    box.focus();
    await fireEvent.keyDown(box, { key: "Tab", shiftKey: true });
    expect(document.activeElement).toBe(last);
  });

  test("Tab between inner controls is left to the browser", async () => {
    render(Dialog, { title: "T", name: "t", onclose: () => {}, children: content });
    const input = screen.getByTestId("inner-input");
    input.focus();
    const tab = new KeyboardEvent("keydown", { key: "Tab", bubbles: true, cancelable: true });
    input.dispatchEvent(tab);
    expect(tab.defaultPrevented).toBe(false);
    expect(document.activeElement).toBe(input);
  });

  test("Escape closes it and goes no further; closing gives focus back to the opener", async () => {
    const open = opener();
    const onclose = vi.fn();
    const behind = vi.fn();
    window.addEventListener("keydown", behind);
    const { unmount } = render(Dialog, { title: "T", name: "t", onclose, children: content });
    await fireEvent.keyDown(screen.getByTestId("inner-input"), { key: "Escape" });
    window.removeEventListener("keydown", behind);
    expect(onclose).toHaveBeenCalledTimes(1);
    expect(behind).not.toHaveBeenCalled();
    unmount();
    expect(document.activeElement).toBe(open);
  });

  test("the Close button closes it", async () => {
    const onclose = vi.fn();
    render(Dialog, { title: "T", name: "t", onclose, children: content });
    await fireEvent.click(screen.getByTestId("t-close"));
    expect(onclose).toHaveBeenCalledTimes(1);
  });
});
