// The `code-execution-mode` command. `run` executes Python in the sandbox for people and
// scripts; `doctor` explains the container runtime; `pull` fetches the sandbox image.
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, expandHome, loadConfigFile, parseConfig } from '../config/load.ts';
import { networkReport } from '../config/network-summary.ts';
import type { Config, SandboxConfig } from '../config/schema.ts';
import { applySecrets, takeSecrets, type ConfigWithSecrets, type Secrets } from '../config/secrets.ts';
import {
  checkSandbox,
  forbiddenMountDirs,
  isSandboxError,
  pullImage,
  reportLines,
  reportUses,
  resolveWorkspaceMounts,
} from '../sandbox/index.ts';
import { buildImageCommand } from './build-image.ts';
import { resultJson, runOutput, runToExitCode, writeRunResult, type RunOutput } from './output.ts';
import { createBridge, serveStdio } from '../bridge/server.ts';
import { snippetCommand, SnippetUsageError } from './snippet.ts';
import { signOut, SignOutError } from '../bridge/proxy/oauth/sign-out.ts';
import { takeTokenKey, TokenKeyError } from '../state/oauth-tokens.ts';
import { SealedSecrets, takeSecretsFile } from '../state/secrets-file.ts';

const USAGE = `Usage:
  code-execution-mode [serve] [--config FILE]                 the MCP bridge on stdio
  code-execution-mode run FILE.py | -c CODE | -   [options]   run Python in the sandbox
  code-execution-mode doctor [options]                        check the sandbox: container runtimes, WebAssembly
  code-execution-mode pull [options]                          pull the sandbox image
  code-execution-mode build-image [options]                   build the sandbox image with sandbox.packages
  code-execution-mode snippet list                            the saved snippets
  code-execution-mode snippet save NAME --run RUN_ID [--description TEXT] [--params "a, b=1"] [--force]
                                                              a logged run's code as <stateDir>/snippets/NAME.py
  code-execution-mode snippet remove NAME                     delete one of your snippets
  code-execution-mode sign-out SERVER                         delete the OAuth sign-in (tokens) of a server

Options:
  --config FILE     JSON configuration (servers, sandbox, stateDir)
  --backend NAME    auto | container | wasm: where code runs (auto: a container
                    when one can run here, else WebAssembly)
  --runtime NAME    auto | podman | docker
  --image IMAGE     sandbox image (must have python3)
  --pull            pull the sandbox image on first use when it is missing
  --timeout SEC     time limit of the run
  --session NAME    session to run in (default "default")
  --workspace DIR   what \${workspaceFolder} means in server entries
                    (default: the config's workspaceFolder, else the current folder);
                    may be given several times (the first is \${workspaceFolder})
  --workspace-access none | read-only
                    read-only: mount those folders (--workspace, else the current
                    folder) in the sandbox, read-only, noexec: one at /workspace,
                    several at /workspace/NAME (NAME from the folder's name)
  --json            print the whole result as JSON
  --raw             write the sandbox's output as it is; on a terminal, control
                    characters (escape sequences, OSC 52...) are otherwise shown
                    escaped, as \x1b
  -h, --help        this text

Exit status of run: 0 ok, 1 error in the code, 124 timeout, 130 cancelled,
2 bad usage or configuration, 3 sandbox unavailable.`;

const options = {
  config: { type: 'string' },
  backend: { type: 'string' },
  runtime: { type: 'string' },
  image: { type: 'string' },
  pull: { type: 'boolean' },
  timeout: { type: 'string' },
  session: { type: 'string' },
  workspace: { type: 'string', multiple: true },
  'workspace-access': { type: 'string' },
  json: { type: 'boolean' },
  raw: { type: 'boolean' },
  run: { type: 'string' },
  description: { type: 'string' },
  params: { type: 'string' },
  force: { type: 'boolean' },
  c: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  const [command = 'serve', ...rest] = positionals;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // stdout carries the protocol (serve): everything else goes to stderr.
  const log = (line: string) => process.stderr.write(`[code-execution-mode] ${line}\n`);
  // Taken once (they leave the environment): a reload of the file applies them again. Secrets
  // in a sealed file (VS Code with a key) are read again on each reload, so changes reach a running bridge.
  const secretsFile = takeSecretsFile(process.env);
  const envSecrets = takeSecrets(process.env);
  const tokenKey = takeTokenKey(process.env);
  const sealed = secretsFile ? new SealedSecrets(secretsFile, tokenKey, log) : undefined;
  const secrets = () => (sealed ? sealed.read() : Promise.resolve(envSecrets));
  const config = await configFrom(values, secrets, tokenKey);
  switch (command) {
    case 'serve':
      await serveStdio(
        config,
        log,
        values.config ? { file: values.config, secretsFile, load: () => configFrom(values, secrets, tokenKey) } : undefined,
      );
      return new Promise<number>(() => {});
    case 'run':
      return runCommand(config, values, rest);
    case 'doctor':
      return doctorCommand(config.sandbox, config.stateDir);
    case 'pull':
      return pullImage(config.sandbox, (line) => process.stderr.write(`${line}\n`)).then(() => 0);
    case 'build-image':
      return buildImageCommand(config.sandbox, (line) => process.stderr.write(`${line}\n`));
    case 'snippet':
      return snippetCommand(config, values, rest, (line) => process.stdout.write(`${line}\n`));
    case 'sign-out':
      return signOutCommand(config.stateDir, rest);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

async function configFrom(
  values: {
    config?: string;
    backend?: string;
    runtime?: string;
    image?: string;
    pull?: boolean;
    workspace?: string[];
    'workspace-access'?: string;
  },
  secrets: () => Promise<Secrets>,
  tokenKey: Buffer | undefined,
): Promise<ConfigWithSecrets> {
  const loaded: Config = values.config ? await loadConfigFile(values.config) : parseConfig({});
  const base = { ...applySecrets(loaded, await secrets()), tokenKey };
  const sandbox: Record<string, unknown> = { ...base.sandbox };
  if (values.backend) sandbox.backend = values.backend;
  if (values.runtime) sandbox.runtime = values.runtime;
  if (values.image) sandbox.image = values.image;
  if (values.pull) sandbox.pull = 'missing';
  const folders = (values.workspace ?? []).map((dir) => resolve(expandHome(dir)));
  const workspaceFolder = folders[0] ?? base.workspaceFolder ?? process.cwd();
  const access = values['workspace-access'];
  if (access !== undefined) {
    if (access !== 'none' && access !== 'read-only') throw new UsageError('--workspace-access takes "none" or "read-only"');
    sandbox.workspace = { path: folders.length > 1 ? folders : workspaceFolder, access };
  }
  const parsed = parseConfig({ sandbox }, 'command-line options').sandbox;
  // Asked for on the command line or in the file: a folder that cannot be mounted is an error here.
  try {
    resolveWorkspaceMounts(parsed, forbiddenMountDirs(base.stateDir));
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
  return { ...base, workspaceFolder, sandbox: parsed };
}

async function codeFrom(values: { c?: string }, rest: string[]): Promise<string> {
  if (values.c !== undefined) {
    if (rest.length > 0) throw new UsageError('give either -c CODE or a file, not both');
    return values.c;
  }
  const [file, ...extra] = rest;
  if (!file || extra.length > 0) throw new UsageError('run needs exactly one FILE.py, "-" for stdin, or -c CODE');
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  return readFile(file, 'utf8').catch((error: Error) => {
    throw new UsageError(`cannot read ${file}: ${error.message}`);
  });
}

function timeoutFrom(text: string | undefined, sandbox: SandboxConfig): number {
  if (text === undefined) return sandbox.timeoutSeconds;
  const seconds = Number(text);
  if (!Number.isFinite(seconds) || seconds <= 0) throw new UsageError(`--timeout must be a positive number of seconds, not "${text}"`);
  if (seconds > sandbox.maxTimeoutSeconds) {
    throw new UsageError(`--timeout ${seconds} exceeds sandbox.maxTimeoutSeconds (${sandbox.maxTimeoutSeconds})`);
  }
  return seconds;
}

async function runCommand(
  config: Config,
  values: { c?: string; timeout?: string; session?: string; json?: boolean; raw?: boolean },
  rest: string[],
): Promise<number> {
  const code = await codeFrom(values, rest);
  const timeoutSeconds = timeoutFrom(values.timeout, config.sandbox);
  // On a terminal, what the sandbox (or a proxied server, in the log) wrote is shown escaped.
  const out = runOutput(process, values.raw === true);
  // The same bridge as the MCP server, so proxied servers are callable and the run is logged.
  const bridge = await createBridge(config, (line) => out.stderr(`[code-execution-mode] ${line}\n`));
  const manager = bridge.sandbox;
  const runId = randomUUID();
  const abort = new AbortController();
  let interrupts = 0;
  const onSignal = () => {
    interrupts++;
    if (interrupts > 1) process.exit(130);
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const live = values.json ? undefined : liveWriter(config.sandbox.maxOutputChars, out);
    bridge.runLog.runStarted({ run: runId, session: values.session ?? 'default', code, timeoutMs: timeoutSeconds * 1000 });
    const requests = bridge.requests.forRun();
    const result = await manager.execute(code, {
      runId,
      onRequest: requests.handle,
      // Its network requests are recorded in the run log (nobody is asked: no client here).
      egress: bridge.egress({ signal: abort.signal, session: values.session ?? 'default' }),
      timeoutMs: timeoutSeconds * 1000,
      signal: abort.signal,
      ...(values.session ? { session: values.session } : {}),
      ...(live ? { onOutput: live.write } : {}),
    });
    const tier = manager.tier();
    bridge.runLog.runEnded(result, { toolCalls: requests.toolCalls(), ...(tier ? { sandbox: tier } : {}) });
    if (values.json) process.stdout.write(`${resultJson(result, out)}\n`);
    else writeRunResult(result, live?.printed ?? { stdout: 0, stderr: 0 }, out);
    return runToExitCode(result.status);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await bridge.close();
  }
}

/** Streams output as it arrives, up to the head that the capped result keeps. */
function liveWriter(limit: number, out: RunOutput) {
  const headLimit = Math.ceil(limit / 2);
  const printed = { stdout: 0, stderr: 0 };
  const write = (stream: 'stdout' | 'stderr', text: string) => {
    const room = headLimit - printed[stream];
    if (room <= 0) return;
    const part = text.slice(0, room);
    printed[stream] += part.length;
    out[stream](part);
  };
  return { write, printed };
}

async function signOutCommand(stateDir: string, rest: string[]): Promise<number> {
  const [server, ...extra] = rest;
  if (!server || extra.length > 0) throw new UsageError('sign-out needs exactly one SERVER');
  const existed = await signOut(stateDir, server);
  process.stdout.write(existed ? `signed out of ${server}: its tokens are deleted\n` : `no sign-in stored for ${server}\n`);
  return 0;
}

async function doctorCommand(sandbox: SandboxConfig, stateDir: string): Promise<number> {
  const report = await checkSandbox(sandbox, { all: true, stateDir });
  process.stdout.write(`${reportLines(report).join('\n')}\nNetwork (sandbox.network): ${networkReport(sandbox.network)}\n`);
  // Not ready means no run can start: a non-zero status scripts can test.
  return reportUses(report) ? 0 : 3;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`code-execution-mode: ${message}\n`);
    if (
      error instanceof UsageError ||
      error instanceof SnippetUsageError ||
      error instanceof SignOutError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      process.stderr.write(`\n${USAGE}\n`);
      process.exitCode = 2;
    } else if (error instanceof ConfigError || error instanceof TokenKeyError) process.exitCode = 2;
    else if (isSandboxError(error)) process.exitCode = 3;
    else process.exitCode = 1;
  },
);
