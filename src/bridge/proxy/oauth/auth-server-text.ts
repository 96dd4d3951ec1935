// An authorization server's own words (an OAuth error's error_description, or the raw body of
// an answer that was not one) as the bridge passes them on, to its log, a server's status and
// sandboxed code: one line, at most MAX_AUTH_TEXT characters, and every control, bidi or
// invisible character written as a visible escape, so that they can neither draw a line of
// their own nor hide or reorder what they say.
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { escapeUnseen, oneLine } from '../../../shared/shown-text.ts';

/** The most of the authorization server's own words kept in a status or an error. */
export const MAX_AUTH_TEXT = 300;

/** The error as "<error code>: <description>" (an OAuth error) or its message, cleaned and capped. */
export function authServerText(error: unknown): string {
  const raw =
    error instanceof OAuthError
      ? error.message
        ? `${error.errorCode}: ${error.message}`
        : error.errorCode
      : error instanceof Error
        ? error.message
        : String(error);
  // Escapes only lengthen the text: a few times the cap is all that can be kept of it.
  return oneLine(escapeUnseen(raw.slice(0, MAX_AUTH_TEXT * 4).replace(/\s+/g, ' ')), MAX_AUTH_TEXT);
}
