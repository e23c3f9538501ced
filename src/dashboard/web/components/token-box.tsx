import { LOGOUT_URL, WRITABLE } from '../api.js';

/**
 * The console's mode in the header: read-only (started without a token), or signed in with a way to sign
 * out. With a token the page is only served once signed in (the server's sign-in page takes the token).
 */
export function TokenBox() {
  if (!WRITABLE)
    return (
      <p class="mode" role="status">
        Read-only: started without a token
      </p>
    );
  return (
    <form class="mode" method="post" action={LOGOUT_URL}>
      <span role="status">Actions enabled</span> <button type="submit">Sign out</button>
    </form>
  );
}

/** Whether actions can be offered: the server has a token (and this page is signed in to be served). */
export function canAct(): boolean {
  return WRITABLE;
}
