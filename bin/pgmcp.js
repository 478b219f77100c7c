#!/usr/bin/env node
// Thin launcher: the CLI lives in the compiled TypeScript (npm install builds it via `prepare`).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/src/main.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    'pgmcp is not built yet: run `npm install` (or `npm run build`) in the pgmcp folder first.\n',
  );
  process.exit(1);
}
const { main } = await import(entry.href);
await main(process.argv.slice(2));
