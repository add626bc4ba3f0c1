// Hosts of the outside world as the network tests name them: one web server on 127.0.0.1 that
// answers for every name and records what it was asked, and the resolver the egress proxy is given
// in tests (not a user setting): each name maps to the address the policy judges and to this
// server, where the proxy really connects.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Resolved } from '../../../src/runner/core/network/proxy.ts';

export interface NamedHosts {
  /** Each request as "<Host header> <path>". */
  readonly seen: string[];
  /** The server's port on 127.0.0.1 (known once started). */
  readonly port: number;
  start(): Promise<void>;
  /** The proxy's resolver: a name the test did not give is not found. */
  resolve(host: string): Promise<Resolved[]>;
  close(): Promise<void>;
}

/** `addresses`: each name and the address it stands at for the policy (203.0.113.x is public, 127.0.0.1 is not). */
export function namedHosts(addresses: Record<string, string>): NamedHosts {
  const seen: string[] = [];
  let port = 0;
  const web = http.createServer((req, res) => {
    seen.push(`${req.headers.host} ${req.url}`);
    res.end(`answer from ${req.headers.host}\n`);
  });
  return {
    seen,
    get port() {
      return port;
    },
    start: () =>
      new Promise<void>((resolve) =>
        web.listen(0, '127.0.0.1', () => {
          port = (web.address() as AddressInfo).port;
          resolve();
        }),
      ),
    resolve: async (host) => {
      const address = Object.hasOwn(addresses, host) ? addresses[host] : undefined;
      if (address === undefined) throw new Error('no such name');
      return [{ address, connect: { host: '127.0.0.1', port } }];
    },
    close: async () => {
      web.closeAllConnections();
      await new Promise((resolve) => web.close(resolve));
    },
  };
}
