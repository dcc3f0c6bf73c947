// Vite builds the dashboard into ui/dist, which the Tauri shell embeds (frontendDist "../ui/dist").
// Vitest shares this config: component tests run in jsdom with Svelte's browser build.
import { defineConfig } from "vitest/config";
import { svelte } from "@sveltejs/vite-plugin-svelte";

export default defineConfig({
  plugins: [svelte()],
  // Relative asset paths, so dist/index.html works from tauri://localhost, a static server and file://.
  base: "./",
  clearScreen: false,
  server: { host: "127.0.0.1", port: 5173, strictPort: true },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    // No source maps in the bundle the shell embeds; `npm run dev` has them.
    sourcemap: false,
  },
  resolve: process.env.VITEST ? { conditions: ["browser"] } : undefined,
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.ts"],
    setupFiles: ["src/test-setup.ts"],
  },
});
