// The fetch an HTTP server's transport uses: every response body is read through a counter, so
// that a server sending more than the cap in one message (a JSON body, or one server-sent
// event) is cut off when the cap is reached rather than read whole. The same reader waits
// while the server's flow is held (a notification flood).
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { Flow } from './guarded-transport.ts';
import { ProxyLimitError } from './limits.ts';
import { sizeText } from '../../shared/byte-size.ts';

/** Statuses whose responses cannot carry a body (the Response constructor refuses one). */
const NO_BODY = new Set([101, 103, 204, 205, 304]);
const LF = 0x0a;
const CR = 0x0d;

export interface FetchLimits {
  maxBytes: number;
  flow: Flow;
  /** Called once, when a message goes over the cap. */
  onOversize(): void;
}

export function limitedFetch(base: FetchLike, limits: FetchLimits): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (!response.body || NO_BODY.has(response.status) || response.status < 200 || response.status > 599) return response;
    const events = (response.headers.get('content-type') ?? '').toLowerCase().startsWith('text/event-stream');
    return new Response(countedBody(response.body, events, limits), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/**
 * The body, refused past `maxBytes` of one message: the whole body, or for an event stream the
 * bytes since the last blank line (the end of an event; LF or CRLF line ends).
 */
function countedBody(body: ReadableStream<Uint8Array>, events: boolean, limits: FetchLimits): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let message = 0;
  // Bytes of the current line so far, and whether its last byte is a CR (CRLF split over reads).
  let line = 0;
  let lineCR = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        await limits.flow.wait();
        const { value, done } = await reader.read();
        if (done) return controller.close();
        if (events) {
          let start = 0;
          for (let at = value.indexOf(LF); at >= 0; at = value.indexOf(LF, at + 1)) {
            const endsWithCR = at > start ? value[at - 1] === CR : lineCR;
            // An empty line (or a lone CR) ends the event: count anew after it.
            if (line + (at - start) - (endsWithCR ? 1 : 0) === 0) message = -(at + 1);
            line = 0;
            lineCR = false;
            start = at + 1;
          }
          if (value.length > start) {
            line += value.length - start;
            lineCR = value[value.length - 1] === CR;
          }
          message += value.length;
        } else {
          message += value.length;
        }
        if (message > limits.maxBytes) {
          const error = new ProxyLimitError(`the server sent a message of more than ${sizeText(limits.maxBytes)} (proxy.maxResultBytes)`);
          limits.onOversize();
          controller.error(error);
          await reader.cancel(error).catch(() => undefined);
          return;
        }
        controller.enqueue(value);
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
