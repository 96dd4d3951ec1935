// How a proxied server is started: variables in its entry, the environment it inherits, the
// stderr quoted when it fails (secrets redacted), and the run clock that does not count the wait.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConfig } from '../../src/config/load.ts';
import type { StdioServerConfig } from '../../src/config/schema.ts';
import { applySecrets, secretsSchema, takeSecrets } from '../../src/config/secrets.ts';
import { substitute, substituteServer, VariableError, type VariableContext } from '../../src/config/variables.ts';
import { redactor, stderrSummary } from '../../src/bridge/proxy/stderr.ts';
import { INHERITED_NETWORK_ENV, serverEnvironment } from '../../src/bridge/proxy/transports.ts';
import { RunClock } from '../../src/sandbox/sessions/run-clock.ts';
import { FakeClock } from '../helpers/fake-clock.ts';

const context: VariableContext = {
  workspaceFolder: '/home/ada/projects/engine',
  userHome: '/home/ada',
  pathSeparator: '/',
  env: { TOKEN_DIR: '/run/tokens', EMPTY: '' },
  inputs: { 'api-key': 's3cret-value' },
};

const server = (raw: unknown) => parseConfig({ servers: { s: raw } }).servers.s!;

test('variables: the forms of mcp.json are substituted, unknown forms are kept', () => {
  assert.equal(substitute('${workspaceFolder}/data', context), '/home/ada/projects/engine/data');
  assert.equal(substitute('${workspaceFolderBasename}', context), 'engine');
  assert.equal(substitute('${userHome}${/}x${pathSeparator}y', context), '/home/ada/x/y');
  assert.equal(substitute('${env:TOKEN_DIR}:${env:UNSET_VAR}:${env:EMPTY}.', context), '/run/tokens::.');
  assert.equal(substitute('Bearer ${input:api-key}', context), 'Bearer s3cret-value');
  assert.equal(
    substitute('${config:editor.fontSize} ${command:pick} ${workspaceFolder:other} $HOME ${', context),
    '${config:editor.fontSize} ${command:pick} ${workspaceFolder:other} $HOME ${',
  );
  assert.equal(substitute('plain', context), 'plain');
});

test('variables: values are not substituted again, and env names ignore case only when asked', () => {
  const nested = { ...context, env: { A: '${userHome}' } };
  assert.equal(substitute('${env:A}', nested), '${userHome}');
  assert.equal(substitute('${env:token_dir}', context), '');
  assert.equal(substitute('${env:token_dir}', { ...context, envIgnoresCase: true }), '/run/tokens');
});

test('variables: a missing input or workspace folder is an error naming the variable', () => {
  assert.throws(
    () => substitute('${input:github-token}', context),
    (error: unknown) => {
      assert.ok(error instanceof VariableError);
      assert.equal(error.inputId, 'github-token');
      assert.equal(error.variable, '${input:github-token}');
      return true;
    },
  );
  assert.throws(
    () => substitute('${workspaceFolder}', { ...context, workspaceFolder: undefined }),
    /\$\{workspaceFolder\} is used but no workspace folder is known/,
  );
  assert.throws(() => substitute('${input:toString}', context), VariableError, 'inherited object keys are not inputs');
});

test('variables: a stdio entry gets command, args, env and cwd substituted; secret env stays literal', () => {
  const entry = server({
    command: '${userHome}/bin/tool',
    args: ['--root', '${workspaceFolder}', '--key=${input:api-key}'],
    env: { DATA: '${workspaceFolder}${/}data', TOKEN: '${env:TOKEN_DIR}', SECRET: 'a${userHome}b' },
    cwd: '${workspaceFolder}',
    description: '${userHome} is not touched here',
  });
  const out = substituteServer(entry, context, new Set(['SECRET']));
  assert.equal(out.command, '/home/ada/bin/tool');
  assert.deepEqual(out.args, ['--root', '/home/ada/projects/engine', '--key=s3cret-value']);
  assert.deepEqual(out.env, { DATA: '/home/ada/projects/engine/data', TOKEN: '/run/tokens', SECRET: 'a${userHome}b' });
  assert.equal(out.cwd, '/home/ada/projects/engine');
  assert.equal(out.description, '${userHome} is not touched here');
  assert.equal((entry as StdioServerConfig).args[1], '${workspaceFolder}', 'the entry itself is unchanged');
});

test('variables: an HTTP entry gets url and header values substituted', () => {
  const out = substituteServer(
    server({ url: 'http://127.0.0.1:1/${env:TOKEN_DIR}', headers: { Authorization: 'Bearer ${input:api-key}' } }),
    context,
  );
  assert.equal(out.url, 'http://127.0.0.1:1//run/tokens');
  assert.deepEqual(out.headers, { Authorization: 'Bearer s3cret-value' });
});

test('secrets: inputs are accepted beside env and headers; old shapes still parse; the variable is removed', () => {
  assert.deepEqual(secretsSchema.parse({ s: { env: { A: '1' } } }), { s: { env: { A: '1' }, headers: {} } });
  assert.deepEqual(secretsSchema.parse({ s: { inputs: { tok: 'x' } } }).s!.inputs, { tok: 'x' });
  const env: NodeJS.ProcessEnv = { CODE_EXECUTION_MODE_SECRETS: JSON.stringify({ s: { inputs: { tok: 'x' } } }) };
  const secrets = takeSecrets(env);
  assert.equal(env.CODE_EXECUTION_MODE_SECRETS, undefined);
  const applied = applySecrets(parseConfig({ servers: { s: { command: 'x', env: { A: '1' } } } }), secrets);
  assert.deepEqual(applied.secrets, secrets, 'the hub gets the inputs with the configuration');
  assert.throws(() => parseConfig({ secrets: {} }), /secrets/, 'a configuration file cannot supply them');
});

test('environment: proxy and certificate variables are inherited, nothing else of the host', () => {
  const host: NodeJS.ProcessEnv = {
    PATH: '/usr/bin',
    HOME: '/home/ada',
    HTTPS_PROXY: 'http://proxy:3128',
    https_proxy: 'http://proxy:3128',
    NO_PROXY: 'localhost',
    NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
    SSL_CERT_FILE: '/etc/ssl/cert.pem',
    REQUESTS_CA_BUNDLE: '/etc/ca.pem',
    CURL_CA_BUNDLE: '/etc/ca.pem',
    NODE_OPTIONS: '--require /tmp/evil.js',
    CODE_EXECUTION_MODE_SECRETS: '{"s":{}}',
    AWS_SECRET_ACCESS_KEY: 'nope',
    ALL_PROXY: '() { :; }',
  };
  const env: Record<string, string | undefined> = serverEnvironment({ OWN: '1', HTTPS_PROXY: 'http://own:1' }, host);
  const expected: Record<string, string> = {
    PATH: '/usr/bin',
    HOME: '/home/ada',
    HTTPS_PROXY: 'http://own:1',
    https_proxy: 'http://proxy:3128',
    NO_PROXY: 'localhost',
    NODE_EXTRA_CA_CERTS: '/etc/ca.pem',
    SSL_CERT_FILE: '/etc/ssl/cert.pem',
    REQUESTS_CA_BUNDLE: '/etc/ca.pem',
    CURL_CA_BUNDLE: '/etc/ca.pem',
    OWN: '1',
  };
  // Windows names ignore case: there https_proxy is HTTPS_PROXY.
  if (process.platform !== 'win32') assert.deepEqual(env, expected);
  for (const name of ['NODE_OPTIONS', 'CODE_EXECUTION_MODE_SECRETS', 'AWS_SECRET_ACCESS_KEY', 'ALL_PROXY'])
    assert.equal(env[name], undefined, name);
  assert.ok(!(INHERITED_NETWORK_ENV as readonly string[]).includes('NODE_OPTIONS'));
});

test('stderr: the last five lines, at most 600 characters, secrets and long values redacted', () => {
  const redact = redactor(['tok', ''], ['short', 'a-long-header-value', 'x'.repeat(8)]);
  assert.equal(redact('use tok and short and a-long-header-value and xxxxxxxx'), 'use *** and short and *** and ***');
  const tail = ['one', '', 'two', 'three tok', 'four', 'five', 'six a-long-header-value', ''].join('\n');
  assert.equal(stderrSummary(tail, redact), 'two | three *** | four | five | six ***');
  const long = stderrSummary(`${'y'.repeat(2000)}\nend`);
  assert.equal(long.length, 600);
  assert.match(long, /^\.\.\.y+ \| end$/);
  assert.equal(stderrSummary('  \n \n'), '');
});

test('stderr: a secret cut by the length limit is still redacted', () => {
  const secret = 'S'.repeat(50);
  const text = stderrSummary(`${secret}${'z'.repeat(560)}`, redactor([secret], []));
  assert.ok(!text.includes('SSSS'), text);
});

/** A wait the test ends when it chooses. */
function held<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Lets the promise callbacks queued so far run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

test('run clock: fires after the limit when nothing pauses it', () => {
  let fired = 0;
  const time = new FakeClock();
  const clock = new RunClock(80, () => fired++, undefined, time);
  time.advance(79);
  assert.equal(fired, 0);
  time.advance(1);
  assert.equal(fired, 1);
  clock.stop();
});

test('run clock: untimed waits, nested and concurrent, do not count; the time left is kept', async () => {
  let firedAt: number | undefined;
  const time = new FakeClock();
  const clock = new RunClock(200, () => (firedAt = time.now()), undefined, time);
  time.advance(100);
  // Two overlapping waits of 300 ms, one nested in the other: 350 ms uncounted.
  const first = held();
  const outer = held();
  const inner = held();
  const waits = Promise.all([clock.untimed(first.promise), clock.untimed(outer.promise.then(() => clock.untimed(inner.promise)))]);
  time.advance(50);
  outer.resolve();
  await settle();
  time.advance(250);
  first.resolve();
  await settle();
  time.advance(50);
  inner.resolve();
  await waits;
  assert.equal(firedAt, undefined, 'the pause must not count');
  assert.equal(clock.untimedMs, 350);
  time.advance(99);
  assert.equal(firedAt, undefined);
  time.advance(1);
  assert.equal(firedAt, 550, 'the 100 ms left must still run out');
});

test('run clock: the uncounted time has a ceiling; a stopped clock never fires', async () => {
  let fired = 0;
  const time = new FakeClock();
  const clock = new RunClock(50, () => fired++, 100, time);
  const wait = held();
  const waited = clock.untimed(wait.promise);
  time.advance(149);
  assert.equal(fired, 0);
  time.advance(1);
  assert.equal(fired, 1, 'paused longer than its budget plus the limit, it fires');
  wait.resolve();
  await waited;
  const stopped = new RunClock(30, () => fired++, undefined, time);
  stopped.stop();
  assert.equal(time.waiting, 0, 'no timer is left to fire');
  time.advance(60);
  assert.equal(fired, 1);
});

test('run clock: a failing wait resumes the clock and passes the error on', async () => {
  let fired = 0;
  const time = new FakeClock();
  const clock = new RunClock(150, () => fired++, undefined, time);
  const wait = held();
  const waited = clock.untimed(wait.promise);
  time.advance(200);
  wait.reject(new Error('server gone'));
  await assert.rejects(waited, /server gone/);
  assert.equal(fired, 0);
  time.advance(149);
  assert.equal(fired, 0);
  time.advance(1);
  assert.equal(fired, 1);
});
