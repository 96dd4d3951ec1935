// Where a proxied HTTP server's OAuth state lives: one owner-only (0600) file per server in
// `<stateDir>/oauth/`, holding the registered client, the tokens and the discovered metadata.
// With a key (VS Code keeps one in SecretStorage and hands it to the bridge in its environment)
// the file is sealed with AES-256-GCM; without one (the CLI) it is plain JSON, protected by its
// mode only. The record names the server's URL: tokens of another URL are never sent.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { ensurePrivateSubdirAsync, readPrivateFile, UnsafeStatePathError, writePrivateFile } from './private-files.ts';

/** The environment variable that carries the token key (32 bytes, base64) to the bridge. */
export const TOKEN_KEY_ENV = 'CODE_EXECUTION_MODE_TOKEN_KEY';
const OAUTH_DIR = 'oauth';
const KEY_BYTES = 32;
/** A stored file over this is not read (the bridge's own files are a few kilobytes). */
const MAX_FILE_BYTES = 256 * 1024;

/** What is kept for one server. Values from the authorization server are checked by the SDK's schemas when used. */
const storedAuthSchema = z.object({
  version: z.literal(1),
  url: z.string(),
  /** The loopback port the client was registered with (its redirect URI). */
  redirectPort: z.number().int().min(1).max(65535).optional(),
  client: z.record(z.string(), z.unknown()).optional(),
  tokens: z.record(z.string(), z.unknown()).optional(),
  /** When the tokens were saved (ms), to tell their age. */
  savedAt: z.number().optional(),
  discovery: z.record(z.string(), z.unknown()).optional(),
});
export type StoredAuth = z.infer<typeof storedAuthSchema>;

const sealedSchema = z.object({
  sealed: z.literal('aes-256-gcm'),
  iv: z.string(),
  tag: z.string(),
  data: z.string(),
});

export class TokenKeyError extends Error {
  override readonly name = 'TokenKeyError';
}

/** Parses the key from its base64 form; throws when it is not 32 bytes. */
export function parseTokenKey(text: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== KEY_BYTES || key.toString('base64') !== text.trim())
    throw new TokenKeyError(`${TOKEN_KEY_ENV} must be ${KEY_BYTES} bytes in base64`);
  return key;
}

/** A new random key, in the base64 form the environment carries. */
export function newTokenKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

/** Reads and removes the key from an environment (the bridge's own), so no child inherits it. */
export function takeTokenKey(env: NodeJS.ProcessEnv): Buffer | undefined {
  const raw = env[TOKEN_KEY_ENV];
  delete env[TOKEN_KEY_ENV];
  return raw ? parseTokenKey(raw) : undefined;
}

/** The additional data binds a sealed file to its server: a file copied to another name does not open. */
function aad(server: string): string {
  return `code-execution-mode oauth v1 ${server}`;
}

export function seal(plain: string, key: Buffer, server: string): string {
  return sealWith(plain, key, aad(server));
}

/** The plain text of a sealed file; throws when the key (or server) is not the one it was sealed with. */
export function unseal(text: string, key: Buffer, server: string): string {
  return unsealWith(text, key, aad(server));
}

/** Seals `plain` bound to `context` (the additional data): a text sealed for one purpose does not open as another's. */
export function sealWith(plain: string, key: Buffer, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return JSON.stringify({
    sealed: 'aes-256-gcm',
    iv: iv.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
    data: data.toString('base64'),
  });
}

/** The plain text sealWith made; throws when the key or the context is not the one it was sealed with. */
export function unsealWith(text: string, key: Buffer, context: string): string {
  const sealed = sealedSchema.parse(JSON.parse(text));
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8');
}

export function tokenFile(stateDir: string, server: string): string {
  return join(stateDir, OAUTH_DIR, `${server}.json`);
}

export class TokenStore {
  readonly file: string;
  private readonly dir: string;
  private readonly server: string;
  private readonly url: string;
  private readonly key: Buffer | undefined;
  private readonly log: (message: string) => void;
  private warned = '';

  constructor(stateDir: string, server: string, url: string, key: Buffer | undefined, log: (message: string) => void = () => {}) {
    this.dir = join(stateDir, OAUTH_DIR);
    this.file = tokenFile(stateDir, server);
    this.server = server;
    this.url = url;
    this.key = key;
    this.log = log;
  }

  /** The stored record for this server's URL; an empty one when there is none or it cannot be read. */
  async read(): Promise<StoredAuth> {
    const empty: StoredAuth = { version: 1, url: this.url };
    let text: string;
    try {
      const read = await readPrivateFile(this.file, MAX_FILE_BYTES);
      if (read === undefined) return existsSync(this.file) ? this.unusable(`${this.file} is over ${MAX_FILE_BYTES} bytes`, empty) : empty;
      text = read;
    } catch (error) {
      return error instanceof UnsafeStatePathError ? this.unusable(error.message, empty) : empty;
    }
    try {
      const isSealed = text.trimStart().startsWith('{"sealed"');
      if (isSealed && !this.key) return this.unusable(`${this.file} is encrypted and this bridge has no key for it; sign in again`, empty);
      // A plain file where a key is expected: written by the CLI; still the user's, so it is used (and sealed on the next save).
      const plain = isSealed && this.key ? unseal(text, this.key, this.server) : text;
      const parsed = storedAuthSchema.parse(JSON.parse(plain));
      return parsed.url === this.url ? parsed : empty;
    } catch {
      return this.unusable(`${this.file} cannot be read (another key, or damaged); sign in again`, empty);
    }
  }

  async write(record: StoredAuth): Promise<void> {
    await ensurePrivateSubdirAsync(this.dir);
    const text = JSON.stringify(record);
    await writePrivateFile(this.file, this.key ? seal(text, this.key, this.server) : text);
  }

  /** Changes the record with `change` (read, change, write). */
  async update(change: (record: StoredAuth) => StoredAuth): Promise<void> {
    await this.write(change(await this.read()));
  }

  async remove(): Promise<void> {
    await rm(this.file, { force: true });
  }

  private unusable(why: string, empty: StoredAuth): StoredAuth {
    if (why !== this.warned) this.log(`server ${this.server}: ${why}`);
    this.warned = why;
    return empty;
  }
}
