// Light, dark, or the system's choice. The CSS follows prefers-color-scheme unless
// <html data-theme> pins a theme; the choice is remembered in localStorage.

export type ThemeChoice = "system" | "light" | "dark";

const KEY = "lifeline.theme";

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
  if (choice === "system") delete root.dataset.theme;
  else root.dataset.theme = choice;
  try {
    localStorage.setItem(KEY, choice);
  } catch {
    // not remembered; still applied
  }
}
