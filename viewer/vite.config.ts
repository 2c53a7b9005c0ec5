// The viewer's build (`npm run build` runs it through scripts/build.mjs): viewer/ → dist/viewer/,
// served by plugins/serve at /viewer/. Everything the page needs is bundled: no CDN, no network.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/viewer/',
  logLevel: 'warn',
  build: {
    outDir: fileURLToPath(new URL('../dist/viewer', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // No inline polyfill script: the page's Content-Security-Policy allows scripts from the server only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    reportCompressedSize: false,
  },
});
