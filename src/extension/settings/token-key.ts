// The key that seals OAuth token files, kept in VS Code's SecretStorage. Made once: the bridge
// and the extension's own hub ask for it at the same time on first use, and two keys would
// make one of them unable to open the other's files. Without SecretStorage (it failed) the
// bridge runs with no key: plain 0600 token files, and the log says so.
import { newTokenKey, parseTokenKey } from '../../state/oauth-tokens.ts';

export const KEY_SECRET = 'codeExecutionMode.oauthTokenKey';

/** The part of vscode.SecretStorage used here. */
export interface KeySecrets {
  get(key: string): PromiseLike<string | undefined>;
  store(key: string, value: string): PromiseLike<void>;
}

const keys = new WeakMap<KeySecrets, Promise<string | undefined>>();

/** The key (base64), made on first use; undefined when SecretStorage cannot be used (told to `warn`). */
export function tokenKey(secrets: KeySecrets, warn: (message: string) => void): Promise<string | undefined> {
  let key = keys.get(secrets);
  if (!key) {
    key = loadKey(secrets).catch((error: unknown) => {
      // Not kept: the next start tries SecretStorage again.
      keys.delete(secrets);
      warn(
        `OAuth token files are not sealed: the key could not be kept in SecretStorage (${error instanceof Error ? error.message : String(error)}); they stay owner-only (0600) files`,
      );
      return undefined;
    });
    keys.set(secrets, key);
  }
  return key;
}

function valid(text: string | undefined): string | undefined {
  if (!text) return undefined;
  try {
    parseTokenKey(text);
    return text;
  } catch {
    return undefined;
  }
}

async function loadKey(secrets: KeySecrets): Promise<string> {
  const stored = valid(await secrets.get(KEY_SECRET));
  if (stored) return stored;
  // None, or damaged: a new key (old token files then ask for a sign-in again).
  await secrets.store(KEY_SECRET, newTokenKey());
  // Read back: another window may have stored its own at the same moment; the stored one wins.
  const kept = valid(await secrets.get(KEY_SECRET));
  if (!kept) throw new Error('the stored key does not read back');
  return kept;
}
