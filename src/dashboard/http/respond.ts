import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidInputError, isInvalidInputError } from '../../errors/invalid-input-error.js';
import { SECURITY_HEADERS } from './security.js';

/** Sends `body` as JSON with the console's security headers. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Sends an error as `{ error }`: bad input as 400, anything else as 500. */
export function sendError(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (error instanceof HttpError) sendJson(res, error.status, { error: error.message });
  else if (isInvalidInputError(error)) sendJson(res, 400, { error: error.message });
  else sendJson(res, 500, { error: error instanceof Error ? error.message : String(error) });
}

/** An error with the HTTP status it answers with. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const MAX_BODY = 64 * 1024;

/**
 * The request's JSON body. A framework that already parsed it (Express's `express.json()`, Fastify)
 * leaves it on `req.body`, which is used as it is; a body read by a framework that did not hand it over
 * is an error that says how to mount the console, never an empty body.
 */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const parsed = (req as { body?: unknown }).body;
  if (parsed !== undefined && typeof parsed === 'object' && parsed !== null && !Buffer.isBuffer(parsed))
    return parsed as Record<string, unknown>;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new HttpError(413, `request body over ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  // A body announced but not there was read before the console got the request, and is lost to it.
  if (size === 0 && Number(req.headers['content-length'] ?? 0) > 0)
    throw new HttpError(
      500,
      'the request body was read before the console got it (a framework that parses bodies, such as Fastify): hand the parsed body over as req.body (see "Mounting the console in your app" in docs/console.md)',
    );
  if (text.trim() === '') return {};
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new InvalidInputError('the request body must be a JSON object');
    return value as Record<string, unknown>;
  } catch (error) {
    if (isInvalidInputError(error)) throw error;
    throw new InvalidInputError(`the request body is not JSON: ${(error as Error).message}`);
  }
}

const MAX_SIGN_IN_BODY = 4 * 1024;

/**
 * The token a sign-in request gives: the sign-in form's `text/plain` body (`token=…`), a form-encoded
 * one, or JSON `{ "token": … }`; a body a framework already parsed (an object, or Fastify's string) is
 * used as it is. Undefined when there is none.
 */
export async function readSignIn(req: IncomingMessage): Promise<string | undefined> {
  const parsed = (req as { body?: unknown }).body;
  if (typeof parsed === 'object' && parsed !== null && !Buffer.isBuffer(parsed) && 'token' in parsed) {
    const token = (parsed as { token?: unknown }).token;
    return typeof token === 'string' ? token : undefined;
  }
  let text: string;
  if (typeof parsed === 'string') text = parsed;
  else {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_SIGN_IN_BODY) throw new HttpError(413, `sign-in body over ${MAX_SIGN_IN_BODY} bytes`);
      chunks.push(chunk as Buffer);
    }
    text = Buffer.concat(chunks).toString('utf8');
  }
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json') {
    try {
      const token = (JSON.parse(text) as { token?: unknown } | null)?.token;
      return typeof token === 'string' ? token : undefined;
    } catch {
      return undefined;
    }
  }
  if (type === 'application/x-www-form-urlencoded')
    return new URLSearchParams(text).get('token') ?? undefined;
  // text/plain, as a form sends it: one `name=value` per line, nothing escaped.
  for (const line of text.split(/\r?\n/)) if (line.startsWith('token=')) return line.slice('token='.length);
  return undefined;
}
