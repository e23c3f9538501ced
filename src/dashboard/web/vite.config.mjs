// Builds the console's front end (Preact + uPlot) into dist/dashboard/web/console.js and console.css,
// which the handler serves from the package: nothing loads from a CDN. Run by `npm run build`.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  root: here('.'),
  logLevel: 'warn',
  publicDir: false,
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  define: { 'process.env.NODE_ENV': '"production"' },
  build: {
    outDir: here('../../../dist/dashboard/web'),
    emptyOutDir: true,
    target: 'es2020',
    minify: true,
    sourcemap: false,
    cssCodeSplit: false,
    // Library mode keeps whitespace in ES output; the console ships one file, so minify it fully.
    rolldownOptions: { output: { minify: true } },
    lib: {
      entry: here('main.tsx'),
      formats: ['es'],
      fileName: () => 'console.js',
      cssFileName: 'console',
    },
  },
});
