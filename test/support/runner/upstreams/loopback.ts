// Where every scripted model service listens: a free port on 127.0.0.1, kept-alive connections as
// a service keeps them, and a close that does not wait for the clients that still hold one.
import { once } from 'node:events';
import type * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export async function listenOnLoopback(server: http.Server, onClose: () => void = () => undefined): Promise<{ port: number; close: () => Promise<void> }> {
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        onClose();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
