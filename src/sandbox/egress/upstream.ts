// Resolving a name once on the host and connecting to an address that was checked: the proxy
// connects to the address itself, never to the name, so that a second answer from DNS cannot
// send the connection somewhere the check did not see.
import { promises as dns, type LookupAddress } from 'node:dns';
import { connect as netConnect, isIP, type Socket } from 'node:net';
import { untilAborted } from './questions.ts';

/** Resolves a name to all its addresses (dns.promises.lookup with `all: true` by default). */
export type EgressLookup = (hostname: string) => Promise<readonly LookupAddress[]>;

/** Opens a TCP connection to an IP address (net.connect by default). */
export type EgressConnect = (address: string, port: number) => Socket;

export const defaultLookup: EgressLookup = (hostname) => dns.lookup(hostname, { all: true });

export const defaultConnect: EgressConnect = (address, port) => netConnect({ host: address, port });

/** How long one address may take to accept a connection before the next is tried. */
export const CONNECT_TIMEOUT_MS = 15_000;

/** The addresses of `host`: itself when it is an address, else what the lookup gives (never empty). */
export async function addressesOf(host: string, lookup: EgressLookup, signal: AbortSignal): Promise<string[]> {
  if (isIP(host)) return [host];
  const found = await untilAborted(lookup(host), signal);
  const addresses = [...new Set(found.map((entry) => entry.address))];
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  return addresses;
}

function connectOne(connect: EgressConnect, address: string, port: number, signal: AbortSignal): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const socket = connect(address, port);
    const fail = (error: Error) => {
      cleanup();
      socket.destroy();
      reject(error);
    };
    const onError = (error: Error) => fail(error);
    const onTimeout = () => fail(new Error(`${address} port ${port} did not answer in ${CONNECT_TIMEOUT_MS / 1000} s`));
    const onAbort = () => fail(signal.reason instanceof Error ? signal.reason : new Error('the run ended'));
    const onConnect = () => {
      cleanup();
      resolve(socket);
    };
    const timer = setTimeout(onTimeout, CONNECT_TIMEOUT_MS);
    const cleanup = () => {
      clearTimeout(timer);
      socket.off('error', onError).off('connect', onConnect);
      signal.removeEventListener('abort', onAbort);
    };
    socket.once('error', onError).once('connect', onConnect);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A connection to the first of `addresses` (all checked) that accepts one, and which it was. */
export async function connectFirst(
  connect: EgressConnect,
  addresses: readonly string[],
  port: number,
  signal: AbortSignal,
): Promise<{ socket: Socket; address: string }> {
  let last: Error = new Error('no address to connect to');
  for (const address of addresses) {
    try {
      return { socket: await connectOne(connect, address, port, signal), address };
    } catch (error) {
      last = error instanceof Error ? error : new Error(String(error));
      if (signal.aborted) break;
    }
  }
  throw last;
}
