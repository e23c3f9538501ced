/**
 * Rewrites the table of contents of every page in docs/ (`npx tsx tests/docs/toc.ts`), so that a section
 * appended to a page only needs its heading: run this, and the docs test agrees again.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withToc } from './markdown.js';

const docs = fileURLToPath(new URL('../../docs/', import.meta.url));
for (const name of readdirSync(docs).filter((n) => n.endsWith('.md'))) {
  const path = join(docs, name);
  const text = readFileSync(path, 'utf8');
  const updated = withToc(text);
  if (updated !== text) {
    writeFileSync(path, updated);
    console.log(`docs/${name}: table of contents rewritten`);
  }
}
