// Light, dark, or the system's choice. <html data-theme> always names the theme in effect
// ("light" or "dark"): a pinned one, or the system's, followed as it changes. The CSS has
// one set of dark tokens, keyed on that attribute. The choice is remembered in localStorage.

export type ThemeChoice = "system" | "light" | "dark";

const KEY = "lifeline.theme";
const DARK = "(prefers-color-scheme: dark)";

/** Stops following the system's theme (set while the choice is "system"). */
let unfollow: (() => void) | null = null;

export function loadTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    if (v === "light" || v === "dark" || v === "system") return v;
  } catch {
    // storage unavailable (private mode): the system's choice
  }
  return "system";
}

export function applyTheme(choice: ThemeChoice, root: HTMLElement = document.documentElement): void {
  unfollow?.();
  unfollow = null;
  if (choice === "system") {
    const query = typeof matchMedia === "function" ? matchMedia(DARK) : null;
    const follow = () => {
      root.dataset.theme = query?.matches ? "dark" : "light";
    };
    follow();
    if (query) {
      query.addEventListener("change", follow);
      unfollow = () => query.removeEventListener("change", follow);
    }
  } else {
    root.dataset.theme = choice;
  }
  try {
    localStorage.setItem(KEY, choice);
  } catch {
    // not remembered; still applied
  }
}
