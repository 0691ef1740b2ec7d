import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// One static build the tests serve from their own loopback origin; no dev server, no proxy.
export default defineConfig({
  plugins: [react()],
  base: "./",
  logLevel: "warn",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // The page is a test fixture: one bundle, no size warnings, no source maps to write.
    chunkSizeWarningLimit: 100_000,
    sourcemap: false,
  },
});
