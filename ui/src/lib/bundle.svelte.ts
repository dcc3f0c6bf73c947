// Whether the "Export diagnostics" dialog is open. Shared module state, so any component (the
// toolbar, a failure's details) can open it without threading a callback through the panels.

export const bundleDialog = $state({ open: false });

export function openBundleDialog(): void {
  bundleDialog.open = true;
}

export function closeBundleDialog(): void {
  bundleDialog.open = false;
}
