import type { IncomingMessage } from 'node:http';
import { InvalidInputError } from '../../errors/invalid-input-error.js';
import type { Refusal } from './security.js';

/** The names a browser on this machine reaches the console by; always served. */
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Headers a reverse proxy adds: their presence means the console is reached through one. */
const PROXY_HEADERS = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-real-ip'] as const;

interface HostName {
  /** Lower case, without a trailing dot; an IPv6 address keeps its brackets. */
  name: string;
  port?: string;
}

/** `name`, `name:port`, `[v6]` or `[v6]:port`; undefined when the text is none of those. */
function parseHost(text: string): HostName | undefined {
  const found = /^(\[[0-9a-f:.]+\]|[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?\.?)(?::(\d{1,5}))?$/i.exec(
    text.trim(),
  );
  if (!found?.[1]) return undefined;
  const name = found[1].toLowerCase().replace(/\.$/, '');
  return found[2] === undefined ? { name } : { name, port: found[2] };
}

/** Whether a socket's local address is this machine's loopback (IPv4, IPv6, or IPv4 mapped in IPv6). */
function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return true;
  return address === '::1' || /^(::ffff:)?127\./i.test(address);
}

/** What a Host-like header says, as the message quotes it (bounded: it comes from the request). */
function quoted(text: string): string {
  return JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);
}

/**
 * Which `Host` names the console answers: the loopback names (`localhost`, `127.0.0.1`, `[::1]`, on any
 * port) and the names it was given (`--allowed-host`, `allowedHosts`; a name without a port matches any
 * port). A page on another site that points its own name at this machine (DNS rebinding) sends its own
 * name as the Host, so it is refused before anything is read. Reached over the network or through a proxy,
 * the console needs the list: without one it refuses every request, saying so.
 */
export class HostGate {
  readonly #allowed: HostName[];

  /** @throws InvalidInputError naming `option` when an entry is not a host name. */
  constructor(allowedHosts: readonly string[] = [], option = 'allowedHosts') {
    this.#allowed = allowedHosts.map((entry) => {
      const parsed = typeof entry === 'string' ? parseHost(entry) : undefined;
      if (!parsed || /[/@]/.test(entry))
        throw new InvalidInputError(
          `${option}: ${JSON.stringify(entry)} is not a host name; give the name the console is reached by, such as console.example.com or console.example.com:8443 (no scheme, no path)`,
        );
      return parsed;
    });
  }

  /** Whether a list of names was given (required off loopback and behind a proxy). */
  get configured(): boolean {
    return this.#allowed.length > 0;
  }

  /** Whether the console answers for `host` (a Host header's value). */
  serves(host: string): boolean {
    const parsed = parseHost(host);
    if (!parsed) return false;
    if (LOOPBACK_NAMES.has(parsed.name)) return true;
    return this.#allowed.some(
      (entry) => entry.name === parsed.name && (entry.port === undefined || entry.port === parsed.port),
    );
  }

  /** Why the request is refused, or undefined when the console answers it. */
  check(req: IncomingMessage): Refusal {
    const host = req.headers.host;
    if (host === undefined || host === '')
      return {
        status: 400,
        message: 'the request has no Host header: the console answers only for its own names',
      };
    if (!this.serves(host)) return refuseHost(host);
    const forwardedHost = forwardedHostOf(req);
    if (forwardedHost !== undefined && !this.serves(forwardedHost)) return refuseHost(forwardedHost);
    if (!this.configured) {
      const proxy = PROXY_HEADERS.find((name) => req.headers[name] !== undefined);
      if (proxy)
        return {
          status: 403,
          message: `this console is reached through a proxy (the request carries ${proxy}) but was given no names to answer for: start it with --allowed-host <the name users open> (allowedHosts in createDashboard)`,
        };
      const local = req.socket?.localAddress;
      if (!isLoopbackAddress(local))
        return {
          status: 403,
          message: `this console is reached over the network (on ${local}) but was given no names to answer for: start it with --allowed-host <the name users open> (allowedHosts in createDashboard)`,
        };
    }
    return undefined;
  }
}

/** The host a proxy says the browser asked for (`X-Forwarded-Host`, else `Forwarded: host=`), if any. */
export function forwardedHostOf(req: IncomingMessage): string | undefined {
  const header = req.headers['x-forwarded-host'];
  const first = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim();
  if (first) return first;
  const forwarded = req.headers.forwarded;
  const host = forwarded ? /(?:^|[;,\s])host="?([^";,\s]+)"?/i.exec(forwarded)?.[1] : undefined;
  return host || undefined;
}

function refuseHost(host: string): Refusal {
  const name = parseHost(host)?.name;
  return {
    status: 403,
    message: `this console does not answer for the host ${quoted(host)}: a page on another site can point its own name at this machine, so only the loopback names and the names given with --allowed-host are served${
      name
        ? `; if ${name} is the console's name, start it with --allowed-host ${name} (allowedHosts in createDashboard)`
        : ''
    }`,
  };
}

/** Whether `host` (from `--host`) listens on this machine's loopback only. */
export function isLoopbackListen(host: string): boolean {
  const name = host.replace(/^\[|\]$/g, '').toLowerCase();
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}
