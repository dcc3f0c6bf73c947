import { afterEach, describe, expect, test, vi } from "vitest";
import { applyTheme, loadTheme } from "./theme";

/** A stand-in for the system's colour-scheme query that a test can flip. */
function systemScheme(dark: boolean) {
  const listeners = new Set<() => void>();
  const query = {
    get matches() {
      return dark;
    },
    addEventListener: (_: string, f: () => void) => listeners.add(f),
    removeEventListener: (_: string, f: () => void) => listeners.delete(f),
  };
  vi.stubGlobal("matchMedia", () => query);
  return {
    flip(to: boolean) {
      dark = to;
      for (const f of listeners) f();
    },
    listening: () => listeners.size,
  };
}

afterEach(() => {
  vi.unstubAllGlobals();
  localStorage.clear();
});

describe("the theme", () => {
  test("system follows the system as it changes; a pin does not", () => {
    const system = systemScheme(false);
    const root = document.createElement("html");
    applyTheme("system", root);
    expect(root.dataset.theme).toBe("light");
    system.flip(true);
    expect(root.dataset.theme).toBe("dark");

    applyTheme("light", root);
    expect(root.dataset.theme).toBe("light");
    expect(system.listening()).toBe(0);
    system.flip(false);
    system.flip(true);
    expect(root.dataset.theme).toBe("light");
  });

  test("the choice is remembered", () => {
    systemScheme(true);
    applyTheme("dark", document.createElement("html"));
    expect(loadTheme()).toBe("dark");
    applyTheme("system", document.createElement("html"));
    expect(loadTheme()).toBe("system");
  });
});
