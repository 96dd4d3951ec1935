// Server secrets for a running bridge, in a file: the VS Code extension writes them beside the
// bridge's configuration file, owner-only (0600) and sealed with AES-256-GCM under the token key
// the bridge gets in its environment (oauth-tokens.ts), and passes the bridge only the file's
// path. The bridge reads it at start and on each reload of its configuration, so a secret
// changed in VS Code reaches the running bridge (its sessions keep their state). A file that
// cannot be used is said in the log (never a value) and the bridge keeps the secrets it has.
import { existsSync } from 'node:fs';
import { secretsSchema, type Secrets } from '../config/secrets.ts';
import { readPrivateFile, writePrivateFile } from './private-files.ts';
import { sealWith, unsealWith } from './oauth-tokens.ts';

/** The environment variable that carries the sealed file's path to the bridge. */
export const SECRETS_FILE_ENV = 'CODE_EXECUTION_MODE_SECRETS_FILE';
/** The file's name, beside the bridge's configuration file. */
export const SECRETS_FILE_NAME = 'bridge-secrets.sealed.json';
/** A file over this is not read (a few hundred tokens take a few kilobytes). */
export const MAX_SECRETS_FILE_BYTES = 1024 * 1024;
/** Its own additional data: an OAuth token file (sealed with the same key) does not open as this one. */
const CONTEXT = 'code-execution-mode server secrets v1';

/** Why a secrets file is not used; the message names the file and the cause, never a value. */
export class SecretsFileError extends Error {
  override readonly name = 'SecretsFileError';
}

export function sealSecrets(secrets: Secrets, key: Buffer): string {
  return sealWith(JSON.stringify(secrets), key, CONTEXT);
}

/** The secrets in a sealed text; throws SecretsFileError saying why not (`file` names it). */
export function unsealSecrets(text: string, key: Buffer, file: string): Secrets {
  let plain: string;
  try {
    plain = unsealWith(text, key, CONTEXT);
  } catch {
    throw new SecretsFileError(`${file} does not unseal with this bridge's key (sealed with another key, for another purpose, or damaged)`);
  }
  let json: unknown;
  try {
    json = JSON.parse(plain);
  } catch {
    // JSON.parse quotes the text it refuses: not in the message.
    throw new SecretsFileError(`${file} is not valid JSON once unsealed`);
  }
  const parsed = secretsSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    // The path names servers and keys, the code the kind of fault; the message could quote a value.
    throw new SecretsFileError(
      `${file} does not hold server secrets (${issue ? `${issue.code} at ${issue.path.join('.') || 'the top'}` : 'invalid'})`,
    );
  }
  return parsed.data;
}

/** Writes the sealed file (owner-only, replaced whole); throws when it would be over the cap. */
export async function writeSecretsFile(file: string, secrets: Secrets, key: Buffer): Promise<void> {
  const text = sealSecrets(secrets, key);
  if (Buffer.byteLength(text) > MAX_SECRETS_FILE_BYTES)
    throw new SecretsFileError(
      `the server secrets take over ${MAX_SECRETS_FILE_BYTES} bytes sealed; remove the ones no server uses (Code Execution Mode: Remove Server)`,
    );
  await writePrivateFile(file, text);
}

/** Reads the sealed file; throws SecretsFileError when it is missing, too large, a link, or does not unseal or parse. */
export async function readSecretsFile(file: string, key: Buffer | undefined): Promise<Secrets> {
  if (!key) throw new SecretsFileError(`${file} is sealed and this bridge was given no key for it`);
  let text: string | undefined;
  try {
    text = await readPrivateFile(file, MAX_SECRETS_FILE_BYTES);
  } catch (error) {
    throw new SecretsFileError(`${file} cannot be read: ${(error as Error).message}`);
  }
  if (text === undefined)
    throw new SecretsFileError(existsSync(file) ? `${file} is over ${MAX_SECRETS_FILE_BYTES} bytes` : `${file} is missing`);
  return unsealSecrets(text, key, file);
}

/** Reads and removes the file's path from an environment (the bridge's own). */
export function takeSecretsFile(env: NodeJS.ProcessEnv): string | undefined {
  const file = env[SECRETS_FILE_ENV];
  delete env[SECRETS_FILE_ENV];
  return file || undefined;
}

/**
 * A running bridge's secrets from the sealed file: read at start and on each reload. When the
 * file cannot be used, `read` logs why and gives the secrets read last (none at start).
 */
export class SealedSecrets {
  private readonly file: string;
  private readonly key: Buffer | undefined;
  private readonly log: (message: string) => void;
  private kept: Secrets = {};

  constructor(file: string, key: Buffer | undefined, log: (message: string) => void) {
    this.file = file;
    this.key = key;
    this.log = log;
  }

  async read(): Promise<Secrets> {
    try {
      this.kept = await readSecretsFile(this.file, this.key);
    } catch (error) {
      if (!(error instanceof SecretsFileError)) throw error;
      this.log(`server secrets not updated: ${error.message}; the bridge keeps the secrets it has`);
    }
    return this.kept;
  }
}
