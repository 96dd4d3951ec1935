// A proxied tool call may answer -32042 (URL elicitation required): the error's data names the
// URL elicitations the user must complete first. The data is the server's, so it is checked
// against the SDK's schema and capped before anything is asked.
import { ElicitRequestURLParamsSchema, type ElicitRequestURLParams } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** URL elicitations asked for one call; more are not asked (and the call is not retried). */
export const MAX_URL_ELICITATIONS = 3;
const MAX_URL_CHARS = 4096;
const MAX_MESSAGE_CHARS = 2000;

const dataSchema = z.object({ elicitations: z.array(z.unknown()).min(1).max(MAX_URL_ELICITATIONS) });

/** The URL elicitations of a -32042 error's data; none when it is not what the spec says. */
export function urlElicitationsOf(data: unknown): ElicitRequestURLParams[] {
  const parsed = dataSchema.safeParse(data);
  if (!parsed.success) return [];
  const found: ElicitRequestURLParams[] = [];
  for (const item of parsed.data.elicitations) {
    const one = ElicitRequestURLParamsSchema.safeParse(item);
    if (!one.success) return [];
    const { url, message, elicitationId } = one.data;
    if (url.length > MAX_URL_CHARS || message.length > MAX_MESSAGE_CHARS || elicitationId.length > 256) return [];
    found.push({ mode: 'url', url, message, elicitationId });
  }
  return found;
}
