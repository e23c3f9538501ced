import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** What may wait in the console's memory for one live client, by default: 1 MiB. */
export const DEFAULT_LIVE_BUFFER_BYTES = 1_048_576;

/** Why a live stream was cut: what waited for its client, the message that would have passed the limit. */
export interface StreamOverflow {
  /** Bytes waiting in the console's memory for the client when it was cut. */
  bufferedBytes: number;
  /** The message that would have passed the limit, in bytes. */
  messageBytes: number;
  /** The limit, in bytes. */
  limitBytes: number;
  /** How long the stream had been open, ms. */
  openForMs: number;
}

/**
 * One Server-Sent Events response, bounded for a client that stops reading. Node queues what a socket
 * cannot take yet in the process's memory, without bound (`res.write` only returns false), so a frozen
 * tab or a stalled proxy would make the console hold every update it is sent. This stream writes a
 * message while what waits for the client stays within `limitBytes` (and always when nothing waits, so a
 * single message larger than the limit still goes out); past that it cuts the connection with a TCP reset
 * (the kernel's buffers for it go too) and calls `onOverflow`. A browser's `EventSource` that is still
 * there reconnects by itself and gets the latest update.
 */
export class EventStream {
  readonly #openedAt: number;
  #cut = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly limitBytes: number,
    private readonly now: () => number,
    private readonly onOverflow: (overflow: StreamOverflow) => void,
  ) {
    this.#openedAt = now();
  }

  /** Bytes waiting in the console's memory for this client: the response's own buffer and its socket's. */
  get bufferedBytes(): number {
    return this.res.writableLength;
  }

  /** Whether nothing more can be written: the client went, the response ended, or the stream was cut. */
  get closed(): boolean {
    return this.#cut || this.res.destroyed || this.res.writableEnded;
  }

  /**
   * Writes `text` (`bytes` long in UTF-8, computed when not given), or cuts the stream when it would leave
   * more than the limit waiting. False when nothing was written.
   */
  write(text: string, bytes = Buffer.byteLength(text)): boolean {
    if (this.closed) return false;
    const buffered = this.bufferedBytes;
    if (buffered > 0 && buffered + bytes > this.limitBytes) {
      this.#cut = true;
      reset(this.res);
      this.onOverflow({
        bufferedBytes: buffered,
        messageBytes: bytes,
        limitBytes: this.limitBytes,
        openForMs: Math.max(0, this.now() - this.#openedAt),
      });
      return false;
    }
    this.res.write(text);
    return true;
  }
}

/**
 * Closes the response's connection at once: a TCP reset where the socket is plain TCP, so what the
 * kernel still holds for a client that does not read is dropped too, else (TLS, a framework's own
 * stream) by destroying it.
 */
function reset(res: ServerResponse): void {
  const socket = res.socket as Socket | null;
  try {
    if (socket && typeof socket.resetAndDestroy === 'function') {
      socket.resetAndDestroy();
      return;
    }
  } catch {
    // Not a TCP handle (TLS): destroyed below.
  }
  res.destroy();
}
