import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { SECURITY_HEADERS } from './security.js';

/** The front end's files, built by Vite into `dist/dashboard/web` when the package builds. */
const ASSETS: Record<string, string> = {
  'console.js': 'text/javascript; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
};

/**
 * The built front end: next to this module in the package (`dist/dashboard/web`); when running from the
 * sources (tests), the repository's `dist/dashboard/web`.
 */
function assetsFolder(): string {
  const packaged = fileURLToPath(new URL('../web/', import.meta.url));
  if (existsSync(`${packaged}console.js`)) return packaged;
  const built = fileURLToPath(new URL('../../../dist/dashboard/web/', import.meta.url));
  if (existsSync(`${built}console.js`)) return built;
  throw new Error(
    `the console's front end is not built (no console.js in ${packaged} or ${built}): run npm run build`,
  );
}

/** The front end, loaded once: each file's bytes and a version for cache busting. */
export class Assets {
  readonly #files = new Map<string, Buffer>();
  readonly version: string;

  constructor() {
    const folder = assetsFolder();
    const hash = createHash('sha256');
    for (const name of Object.keys(ASSETS)) {
      const bytes = readFileSync(`${folder}${name}`);
      this.#files.set(name, bytes);
      hash.update(bytes);
    }
    this.version = hash.digest('hex').slice(0, 12);
  }

  /** Serves `name` when it is one of the front end's files; false otherwise. */
  serve(name: string, res: ServerResponse): boolean {
    const bytes = this.#files.get(name);
    const type = ASSETS[name];
    if (!bytes || !type) return false;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'Content-Type': type,
      'Content-Length': bytes.length,
      'Cache-Control': 'public, max-age=31536000, immutable',
    });
    res.end(bytes);
    return true;
  }

  /** The page every route of the console loads: the front end does the rest. */
  shell(basePath: string, writable: boolean, res: ServerResponse): void {
    const base = escapeAttribute(basePath);
    const v = this.version;
    sendHtml(
      res,
      200,
      `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stormguard console</title>
<link rel="stylesheet" href="${base}/assets/console.css?v=${v}">
</head>
<body data-base="${base}" data-writable="${writable}">
<div id="app"><p>Loading the stormguard console…</p></div>
<noscript>The stormguard console needs JavaScript.</noscript>
<script type="module" src="${base}/assets/console.js?v=${v}"></script>
</body>
</html>
`,
    );
  }

  /**
   * The sign-in page a console with a token answers before anything else: a plain form (no script) that
   * posts the token once to `login`, which answers with the session cookie. `text/plain` is a body every
   * framework hands over as it is (Fastify refuses form bodies it has no parser for).
   */
  signIn(basePath: string, res: ServerResponse, problem?: string): void {
    const base = escapeAttribute(basePath);
    sendHtml(
      res,
      401,
      `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in: stormguard console</title>
<link rel="stylesheet" href="${base}/assets/console.css?v=${this.version}">
</head>
<body>
<main class="sign-in">
<h1>stormguard console</h1>
<form method="post" action="${base}/login" enctype="text/plain">
<p>This console needs its token. Give it once: the console keeps you signed in on this browser for 12 hours.</p>
<p><label>Token <input type="password" name="token" autocomplete="current-password" required autofocus></label>
<button type="submit">Sign in</button></p>
${
  problem
    ? `<p class="problem" role="alert">${escapeAttribute(problem)}</p>
`
    : ''
}</form>
</main>
</body>
</html>
`,
    );
  }
}

function sendHtml(res: ServerResponse, status: number, html: string): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'Content-Type': 'text/html; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Length': Buffer.byteLength(html),
  });
  res.end(html);
}

/** Escapes text for a double-quoted HTML attribute. */
export function escapeAttribute(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
