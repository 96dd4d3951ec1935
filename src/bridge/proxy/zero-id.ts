// A proxied server's request with id 0, renamed for the SDK client and back. The SDK (1.32) drops
// a notifications/cancelled whose requestId is 0 (it tests the id for truthiness), and an SDK
// server's first request to its client has id 0: without this, a server could not cancel its
// first elicitation or sampling request. Between the SDK client and the server's transport, that
// id travels as a string no server sends; the server sees only its own id.
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** The name id 0 has on the SDK's side (a string with a NUL, which no server uses as an id). */
export const RENAMED_ZERO_ID = '\u0000id-0';

/** A message from the server: its request 0, and its cancellation of request 0, named for the SDK. */
export function zeroIdIn(message: JSONRPCMessage): JSONRPCMessage {
  if (!('method' in message)) return message;
  if ('id' in message && message.id === 0) return { ...message, id: RENAMED_ZERO_ID };
  if (message.method === 'notifications/cancelled' && message.params?.requestId === 0) {
    return { ...message, params: { ...message.params, requestId: RENAMED_ZERO_ID } };
  }
  return message;
}

/** A message to the server: the answer to its request 0 carries id 0 again. */
export function zeroIdOut(message: JSONRPCMessage): JSONRPCMessage {
  if (!('method' in message) && 'id' in message && message.id === RENAMED_ZERO_ID) return { ...message, id: 0 };
  return message;
}
