// A connection URL's credentials end at the last `@` before the host, and a password may hold what a URL
// parser reads as the end of the userinfo (`#`, `?`, `/`, `@`) when it is not percent-encoded: so the
// userinfo is found in the text itself, never only through `new URL`, which would then print the rest of
// the password as a fragment, a query or a path.
// A URL starts at the text's start or after a space, a quote, a comma, `(`, `<` or `=`; not inside a
// password such as `p://x`.
const SCHEME = /(?<=^|[\s"'(,<=])[a-z][a-z0-9+.-]*:\/\//gi;

/**
 * `text` with the userinfo of every `scheme://user:password@host` in it masked: `user:***@`, or `***@` when
 * the user part itself may hold part of the password; a `password=` query parameter too. What follows the last `@` of a URL (the host, port,
 * path) is kept, so a message still says where it tried to connect. Text without credentials is
 * returned as it is. In a message a URL ends at a space or a quote; with `value: true` the text is a flag's
 * value, whose URLs run to the next scheme, so a password with a space is masked whole.
 *
 * @example
 * maskCredentials('redis://:s#cr?t/x@cache:6380/2'); // 'redis://:***@cache:6380/2'
 * maskCredentials('redis://a:p@h1:7000,redis://a:p@h2:7000'); // 'redis://a:***@h1:7000,redis://a:***@h2:7000'
 * maskCredentials('postgres://db/app?password=s3'); // 'postgres://db/app?password=***'
 */
export function maskCredentials(text: string, options: { value?: boolean } = {}): string {
  return maskUrls(text, options.value === true).replace(PASSWORD_PARAMETER, '$1***');
}

// libpq-style URLs may carry the password as a query parameter instead.
const PASSWORD_PARAMETER = /([?&](?:password|pass|sslpassword)=)[^&\s"'<>]*/gi;

function maskUrls(text: string, value: boolean): string {
  const starts = [...text.matchAll(SCHEME)].map((match) => (match.index ?? 0) + match[0].length);
  const [first] = starts;
  if (first === undefined) return text;
  // One URL runs to the next scheme (a cluster list) and, in a message, to the first space or quote.
  const urls = starts.map((start, i) => {
    const url = text.slice(start, starts[i + 1] ?? text.length);
    const stop = value ? -1 : url.search(/[\s"'<>]/);
    return stop === -1 ? { url, tail: '' } : { url: url.slice(0, stop), tail: url.slice(stop) };
  });
  // In a value, entries that disagree on having credentials may be one password cut at a comma or a
  // space that looks like a scheme: mask from the first scheme to the last `@`.
  const withCredentials = urls.filter(({ url }) => url.includes('@')).length;
  if (value && withCredentials > 0 && withCredentials < urls.length)
    return text.slice(0, first) + maskOne(text.slice(first));
  return text.slice(0, first) + urls.map(({ url, tail }) => maskOne(url) + tail).join('');
}

function maskOne(afterScheme: string): string {
  // The authority ends at the first `/` after the last `@`; before that, everything is userinfo.
  const at = afterScheme.lastIndexOf('@');
  if (at === -1) return afterScheme;
  const userinfo = afterScheme.slice(0, at);
  const rest = afterScheme.slice(at);
  const colon = userinfo.indexOf(':');
  const user = colon === -1 ? userinfo : userinfo.slice(0, colon);
  if (colon === -1 && !/[/?#]/.test(userinfo)) return afterScheme; // a user name alone, no password
  return /[/?#]/.test(user) ? `***${rest}` : `${user}:***${rest}`;
}

/**
 * A bad-input message when `url`'s user name or password holds an unencoded `#`, `?` or `/`: a URL parser
 * ends the userinfo there and reads the rest of the password as a fragment, a query or a path (and would
 * print it back in its complaint about them). `undefined` when the credentials are well formed or absent.
 *
 * @example
 * credentialsProblem('--redis', 'redis://:a#b@cache:6379'); // '--redis: "redis://:***@cache:6379" has #, ? or / ...'
 * credentialsProblem('--redis', 'redis://:a%23b@cache:6379'); // undefined
 */
export function credentialsProblem(flag: string, url: string): string | undefined {
  const start = url.indexOf('://');
  const at = url.lastIndexOf('@');
  if (start === -1 || at < start || !/[/?#]/.test(url.slice(start + 3, at))) return undefined;
  return `${flag}: "${maskCredentials(url, { value: true })}" has #, ? or / in its user name or password; percent-encode them there (# is %23, ? is %3F, / is %2F)`;
}
