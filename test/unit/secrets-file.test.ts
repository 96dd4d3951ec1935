// The sealed server secrets file a VS Code window's bridge reads at start and on each reload:
// sealed with its own additional data (an OAuth token file does not pass for it), owner-only,
// and a file that cannot be used leaves the bridge with the secrets it had, saying why in the
// log without any value.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { newTokenKey, parseTokenKey, seal, sealWith } from '../../src/state/oauth-tokens.ts';
import {
  MAX_SECRETS_FILE_BYTES,
  SealedSecrets,
  SecretsFileError,
  sealSecrets,
  SECRETS_FILE_ENV,
  takeSecretsFile,
  unsealSecrets,
  writeSecretsFile,
} from '../../src/state/secrets-file.ts';
import type { Secrets } from '../../src/config/secrets.ts';

const key = parseTokenKey(newTokenKey());
const secrets: Secrets = { fixture: { env: { API_TOKEN: 'hunter2-old' }, headers: {}, inputs: { token: 'input-old' } } };
const newer: Secrets = { fixture: { env: { API_TOKEN: 'hunter2-new' }, headers: {}, inputs: { token: 'input-new' } } };

async function scratch(): Promise<string> {
  return join(await mkdtemp(join(tmpdir(), 'cem-secrets-')), 'bridge-secrets.sealed.json');
}

/** A SealedSecrets that has read `secrets` once, and the lines it logged since. */
async function primed(file: string): Promise<{ sealed: SealedSecrets; logged: string[] }> {
  const logged: string[] = [];
  await writeSecretsFile(file, secrets, key);
  const sealed = new SealedSecrets(file, key, (line) => logged.push(line));
  assert.deepEqual(await sealed.read(), secrets);
  assert.deepEqual(logged, []);
  return { sealed, logged };
}

function noValues(lines: string[]): void {
  for (const value of ['hunter2', 'input-old', 'input-new', 'leaked-value'])
    assert.ok(!lines.some((line) => line.includes(value)), `a value in the log: ${lines.join(' | ')}`);
}

test('sealed secrets: a round trip, with the key only, and nothing readable in the file', async () => {
  const text = sealSecrets(secrets, key);
  assert.ok(!text.includes('hunter2') && !text.includes('input-old'), text);
  assert.deepEqual(unsealSecrets(text, key, 'f'), secrets);
  assert.throws(() => unsealSecrets(text, parseTokenKey(newTokenKey()), 'f'), SecretsFileError);
  const file = await scratch();
  await writeSecretsFile(file, newer, key);
  if (process.platform !== 'win32') assert.equal((await stat(file)).mode & 0o777, 0o600);
  assert.deepEqual(unsealSecrets(await readFile(file, 'utf8'), key, file), newer);
});

test('sealed secrets: a text sealed as an OAuth token file, or for another purpose, is refused', () => {
  const plain = JSON.stringify(secrets);
  assert.throws(() => unsealSecrets(seal(plain, key, 'fixture'), key, 'f'), /f does not unseal with this bridge's key/);
  assert.throws(() => unsealSecrets(sealWith(plain, key, 'code-execution-mode oauth v1 '), key, 'f'), SecretsFileError);
});

test('sealed secrets: a tampered file is not used; the bridge keeps its secrets and says why, without a value', async () => {
  const file = await scratch();
  const { sealed, logged } = await primed(file);
  const envelope = JSON.parse(sealSecrets(newer, key)) as { data: string };
  const data = Buffer.from(envelope.data, 'base64');
  data[0] = data[0]! ^ 1;
  await writeFile(file, JSON.stringify({ ...envelope, data: data.toString('base64') }));
  assert.deepEqual(await sealed.read(), secrets);
  assert.equal(logged.length, 1);
  assert.match(logged[0]!, /server secrets not updated: .* does not unseal with this bridge's key.*keeps the secrets it has/);
  noValues(logged);
});

test('sealed secrets: an oversize, missing, unparsed or misshapen file is said by its cause, never its values', async () => {
  const file = await scratch();
  const { sealed, logged } = await primed(file);
  await writeFile(file, 'x'.repeat(MAX_SECRETS_FILE_BYTES + 1));
  assert.deepEqual(await sealed.read(), secrets);
  assert.match(logged.at(-1)!, new RegExp(`is over ${MAX_SECRETS_FILE_BYTES} bytes`));
  await writeFile(file, sealWith('{"fixture": leaked-value', key, 'code-execution-mode server secrets v1'));
  assert.deepEqual(await sealed.read(), secrets);
  assert.match(logged.at(-1)!, /is not valid JSON once unsealed/);
  await writeFile(
    file,
    sealWith('{"fixture": {"env": {"A": "leaked-value"}, "headers": 7}}', key, 'code-execution-mode server secrets v1'),
  );
  assert.deepEqual(await sealed.read(), secrets);
  assert.match(logged.at(-1)!, /does not hold server secrets \(invalid_type at fixture\.headers\)/);
  await rm(file);
  assert.deepEqual(await sealed.read(), secrets);
  assert.match(logged.at(-1)!, /is missing; the bridge keeps the secrets it has/);
  assert.equal(logged.length, 4);
  noValues(logged);
  // Fixed: read again.
  await writeSecretsFile(file, newer, key);
  assert.deepEqual(await sealed.read(), newer);
});

test('sealed secrets: a bridge with no key, or over the cap, is said; the path leaves the environment', async () => {
  const file = await scratch();
  await writeSecretsFile(file, secrets, key);
  const logged: string[] = [];
  assert.deepEqual(await new SealedSecrets(file, undefined, (line) => logged.push(line)).read(), {});
  assert.match(logged[0]!, /is sealed and this bridge was given no key for it/);
  const huge: Secrets = { big: { env: { V: 'v'.repeat(MAX_SECRETS_FILE_BYTES) }, headers: {} } };
  await assert.rejects(writeSecretsFile(file, huge, key), /over 1048576 bytes sealed/);
  assert.deepEqual(unsealSecrets(await readFile(file, 'utf8'), key, file), secrets, 'the file as it was');
  const env: NodeJS.ProcessEnv = { [SECRETS_FILE_ENV]: file };
  assert.equal(takeSecretsFile(env), file);
  assert.equal(env[SECRETS_FILE_ENV], undefined);
});
