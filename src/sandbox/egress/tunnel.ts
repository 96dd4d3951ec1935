// The bytes of a CONNECT tunnel, both ways, as they are (no TLS interception), each chunk
// counted against the run's byte cap before it is passed on: the chunk that would go over the cap
// closes the tunnel instead.
import type { Socket } from 'node:net';

/** Counts bytes about to pass ("out": sandbox to host, "in": back); false stops the tunnel. */
export type Meter = (direction: 'out' | 'in', bytes: number) => boolean;

function forward(from: Socket, to: Socket, direction: 'out' | 'in', meter: Meter, cut: () => void): void {
  from.on('data', (chunk: Buffer) => {
    if (!meter(direction, chunk.length)) {
      cut();
      return;
    }
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  });
  // A half-close passes on: the other side may still answer.
  from.on('end', () => to.end());
}

/** Calls `then` once `socket` has closed (at once when it has already). */
function whenClosed(socket: Socket, then: () => void): void {
  if (socket.closed) queueMicrotask(then);
  else socket.once('close', then);
}

/**
 * Relays between the sandbox's socket and the host's until both have closed; "capped" when the
 * byte cap closed it. `head` is what the sandbox sent right after its CONNECT.
 */
export function relay(client: Socket, upstream: Socket, head: Buffer, meter: Meter): Promise<'ended' | 'capped'> {
  return new Promise((resolve) => {
    let capped = false;
    let open = 2;
    const cut = () => {
      capped = true;
      client.destroy();
      upstream.destroy();
    };
    const closed = (other: Socket) => () => {
      // Once one side is gone nothing more can pass that way: let the other drain, then close.
      if (!other.destroyed) other.end(() => other.destroy());
      if (--open === 0) resolve(capped ? 'capped' : 'ended');
    };
    whenClosed(client, closed(upstream));
    whenClosed(upstream, closed(client));
    const fail = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', fail);
    upstream.on('error', fail);
    if (head.length > 0) {
      if (meter('out', head.length)) upstream.write(head);
      else cut();
    }
    if (!capped) {
      forward(client, upstream, 'out', meter, cut);
      forward(upstream, client, 'in', meter, cut);
    }
  });
}
