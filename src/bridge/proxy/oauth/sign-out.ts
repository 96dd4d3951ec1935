// Signing out of a proxied server: its token file (tokens, registered client, metadata) is
// deleted. A bridge that is running sends no token for it from its next request on, and asks
// for a sign-in when the server wants one.
import { rm, stat } from 'node:fs/promises';
import { SERVER_NAME } from '../../../config/schema.ts';
import { tokenFile } from '../../../state/oauth-tokens.ts';

export class SignOutError extends Error {
  override readonly name = 'SignOutError';
}

/** Deletes the server's stored sign-in; says whether there was one. */
export async function signOut(stateDir: string, server: string): Promise<boolean> {
  if (!SERVER_NAME.test(server)) throw new SignOutError(`"${server}" is not a server name`);
  const file = tokenFile(stateDir, server);
  const existed = await stat(file).then(
    () => true,
    () => false,
  );
  await rm(file, { force: true });
  return existed;
}
