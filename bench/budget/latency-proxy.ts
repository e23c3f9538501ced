/**
 * A TCP proxy that delays every chunk by a fixed time in each direction, so a benchmark on one machine can
 * show what round trips cost across a network (a database in another availability zone is 1-2 ms away).
 * Order is kept: every chunk waits the same time, and equal timers fire in the order they were set.
 */
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';

/** A running proxy: connect to `port` on 127.0.0.1 instead of the target. */
export interface LatencyProxy {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Starts a proxy on a free loopback port in front of `targetPort`, delaying each direction by `delayMs`
 * (node's timers round up to whole milliseconds: use 1 or more).
 *
 * @example
 * const proxy = await startLatencyProxy(5432, 1); // about 2 ms round trips
 */
export async function startLatencyProxy(targetPort: number, delayMs: number): Promise<LatencyProxy> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.setNoDelay(true);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    const relay = (from: Socket, to: Socket) => {
      from.on('data', (chunk) => setTimeout(() => to.writable && to.write(chunk), delayMs));
      from.on('end', () => setTimeout(() => to.end(), delayMs));
    };
    relay(client, upstream);
    relay(upstream, client);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
