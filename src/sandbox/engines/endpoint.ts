// Which engine a runtime's CLI talks to, and how that was chosen: the connection or context named
// in settings, CONTAINER_HOST, podman's default system connection, DOCKER_HOST (with its TLS
// variables), DOCKER_CONTEXT, or docker's current context (with its TLS material). Local or remote follows from it: a
// unix socket or named pipe is on this machine; tcp, ssh and other addresses are not, and a
// remote engine cannot mount this machine's folders. Addresses are shown without passwords.
import { z } from 'zod';
import type { RuntimeName } from '../../config/schema.ts';
import { runCli } from './cli.ts';

/** How the endpoint was chosen, in the runtime CLI's own order of precedence. */
export type EndpointSource =
  | 'setting'
  | 'CONTAINER_HOST'
  | 'CONTAINER_CONNECTION'
  | "podman's default connection"
  | 'DOCKER_HOST'
  | 'DOCKER_CONTEXT'
  | "docker's current context"
  | 'built-in default';

export interface EngineEndpoint {
  runtime: RuntimeName;
  /** The engine's address without any password (unix:///..., tcp://host:2376, ssh://user@host/...), when known. */
  address?: string;
  /** The podman connection or docker context, when one was chosen. */
  name?: string;
  source: EndpointSource;
  remote: boolean;
  /** A podman connection that `podman machine` made (its IsMachine): the engine runs in a VM (vm.ts). */
  machine?: boolean;
  /**
   * Docker over tcp with TLS: DOCKER_TLS_VERIFY or a context's TLS material ('verified'), DOCKER_TLS
   * alone or a context's skip-tls-verify ('unverified').
   */
  tls?: 'verified' | 'unverified';
}

export class EndpointError extends Error {
  override name = 'EndpointError';
}

/** The settings that pick a connection or context by name (sandbox.podmanConnection, sandbox.dockerContext). */
export interface EngineSelection {
  podmanConnection?: string | undefined;
  dockerContext?: string | undefined;
}

/** The name the settings pick for this runtime, if any. */
export function selectedName(runtime: RuntimeName, selection: EngineSelection | undefined): string | undefined {
  return (runtime === 'podman' ? selection?.podmanConnection : selection?.dockerContext) || undefined;
}

/** What every CLI call of this runtime starts with when a name is picked: `--connection NAME` or `--context NAME`. */
export function selectionArgs(runtime: RuntimeName, selection: EngineSelection | undefined): string[] {
  const name = selectedName(runtime, selection);
  if (!name) return [];
  return runtime === 'podman' ? ['--connection', name] : ['--context', name];
}

/** `address` without the password of its userinfo (`ssh://me:secret@host` -> `ssh://me@host`). */
export function withoutPassword(address: string): string {
  return address.replace(/^([a-z][a-z0-9+.-]*:\/\/)([^@/]*)@/i, (_all, scheme: string, userinfo: string) => {
    const user = userinfo.split(':')[0] ?? '';
    return user ? `${scheme}${user}@` : scheme;
  });
}

/**
 * A unix socket or named pipe is this machine's, and so is ssh to this machine's loopback: the
 * virtual machine of podman machine (macOS, Windows), lima or colima, which shares the home
 * folder, so the workspace can still be mounted. Anything else (tcp, ssh elsewhere, http) is
 * another machine's.
 */
export function isRemoteAddress(address: string): boolean {
  const trimmed = address.trim();
  if (/^(unix|npipe):\/\//i.test(trimmed) || trimmed.startsWith('/')) return false;
  const ssh = /^ssh:\/\/(?:[^@/]*@)?(\[[^\]]+\]|[^:/]+)/i.exec(trimmed);
  const host = ssh?.[1]?.replace(/^\[|\]$/g, '').toLowerCase();
  return !(host && (host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)));
}

function fromAddress(runtime: RuntimeName, address: string, source: EndpointSource, name?: string, machine?: boolean): EngineEndpoint {
  const clean = withoutPassword(address.trim());
  return { runtime, address: clean, source, remote: isRemoteAddress(clean), ...(name ? { name } : {}), ...(machine ? { machine } : {}) };
}

const podmanConnections = z.array(
  z
    .object({ Name: z.string(), URI: z.string().optional(), Default: z.boolean().optional(), IsMachine: z.boolean().optional() })
    .passthrough(),
);

/** Podman's `system connection list --format json` (null when there are none). */
export function parsePodmanConnections(stdout: string): Array<{ name: string; uri: string; isDefault: boolean; isMachine: boolean }> {
  const parsed = podmanConnections.safeParse(JSON.parse(stdout.trim() || '[]') ?? []);
  if (!parsed.success) throw new EndpointError(`podman system connection list gave an unexpected answer: ${stdout.slice(0, 200)}`);
  return parsed.data.map((c) => ({ name: c.Name, uri: c.URI ?? '', isDefault: c.Default === true, isMachine: c.IsMachine === true }));
}

const dockerContext = z.object({ Name: z.string(), Current: z.boolean().optional(), DockerEndpoint: z.string().optional() }).passthrough();

/** Docker's `context ls --format '{{json .}}'`: one object a line. */
export function parseDockerContexts(stdout: string): Array<{ name: string; endpoint: string; current: boolean }> {
  return stdout
    .split('\n')
    .filter((line) => line.trim().startsWith('{'))
    .map((line) => {
      const parsed = dockerContext.safeParse(JSON.parse(line));
      if (!parsed.success) throw new EndpointError(`docker context ls gave an unexpected answer: ${line.slice(0, 200)}`);
      return { name: parsed.data.Name, endpoint: parsed.data.DockerEndpoint ?? '', current: parsed.data.Current === true };
    });
}

const dockerContextDetail = z.array(
  z
    .object({
      Name: z.string(),
      Endpoints: z
        .object({ docker: z.object({ SkipTLSVerify: z.boolean().optional() }).passthrough().optional() })
        .passthrough()
        .optional(),
      TLSMaterial: z
        .object({ docker: z.array(z.string()).optional() })
        .passthrough()
        .optional(),
    })
    .passthrough(),
);

/**
 * TLS of a docker context, from `docker context inspect` (a JSON array): as docker's CLI decides,
 * TLS when the context holds TLS material (ca, cert, key) or skips verifying the server.
 */
export function parseDockerContextTls(stdout: string): EngineEndpoint['tls'] {
  const parsed = dockerContextDetail.safeParse(JSON.parse(stdout.trim() || '[]'));
  if (!parsed.success || !parsed.data[0])
    throw new EndpointError(`docker context inspect gave an unexpected answer: ${stdout.slice(0, 200)}`);
  const context = parsed.data[0];
  if (context.Endpoints?.docker?.SkipTLSVerify === true) return 'unverified';
  return (context.TLSMaterial?.docker?.length ?? 0) > 0 ? 'verified' : undefined;
}

/** What the detection reads: the environment, the settings, and the runtime's own list (only when needed). */
export interface EndpointInput {
  env: NodeJS.ProcessEnv;
  selection?: EngineSelection | undefined;
  /** The runtime's list of connections or contexts, as its CLI prints it. */
  list: () => Promise<string>;
  /** Docker: `context inspect` of one context (asked only for a tcp one); without it, a context's TLS is not known. */
  inspect?: (name: string) => Promise<string>;
}

/** The engine a CLI talks to when nothing picks another: its own socket on this machine. */
export function builtInEndpoint(runtime: RuntimeName): EngineEndpoint {
  return { runtime, source: 'built-in default', remote: false };
}

/**
 * Podman: --connection, else CONTAINER_HOST, else CONTAINER_CONNECTION, else the default
 * connection, else its own socket. Both --connection and CONTAINER_HOST are refused: podman 4
 * lets CONTAINER_HOST win over --connection, newer ones do not, so which engine runs is unclear.
 */
export async function podmanEndpoint(input: EndpointInput): Promise<EngineEndpoint> {
  const picked = selectedName('podman', input.selection);
  const host = input.env.CONTAINER_HOST?.trim();
  if (picked && host) {
    throw new EndpointError(
      `sandbox.podmanConnection names connection '${picked}', but CONTAINER_HOST is set too (${withoutPassword(host)}), and some podman versions use CONTAINER_HOST whatever --connection says: unset CONTAINER_HOST, or clear sandbox.podmanConnection.`,
    );
  }
  if (!picked && host) return fromAddress('podman', host, 'CONTAINER_HOST');
  const named = picked ?? (input.env.CONTAINER_CONNECTION?.trim() || undefined);
  const connections = parsePodmanConnections(await input.list());
  if (named) {
    const found = connections.find((c) => c.name === named);
    if (!found) {
      const where = picked ? 'sandbox.podmanConnection' : 'CONTAINER_CONNECTION';
      throw new EndpointError(
        `${where} names podman connection '${named}', which does not exist: \`podman system connection list\` lists them (add one with \`podman system connection add\`).`,
      );
    }
    return fromAddress('podman', found.uri, picked ? 'setting' : 'CONTAINER_CONNECTION', found.name, found.isMachine);
  }
  const preferred = connections.find((c) => c.isDefault);
  if (preferred) return fromAddress('podman', preferred.uri, "podman's default connection", preferred.name, preferred.isMachine);
  return builtInEndpoint('podman');
}

/** Docker: --context, else DOCKER_HOST (and its TLS variables), else DOCKER_CONTEXT, else the current context. */
export async function dockerEndpoint(input: EndpointInput): Promise<EngineEndpoint> {
  const picked = selectedName('docker', input.selection);
  const host = input.env.DOCKER_HOST?.trim();
  if (!picked && host) {
    const endpoint = fromAddress('docker', host, 'DOCKER_HOST');
    // Docker's CLI reads these two as set when they are not empty (even "0").
    const tls = !/^tcp:/i.test(host)
      ? undefined
      : input.env.DOCKER_TLS_VERIFY
        ? 'verified'
        : input.env.DOCKER_TLS
          ? 'unverified'
          : undefined;
    return tls ? { ...endpoint, tls } : endpoint;
  }
  const named = picked ?? (input.env.DOCKER_CONTEXT?.trim() || undefined);
  const contexts = parseDockerContexts(await input.list());
  const found = named ? contexts.find((c) => c.name === named) : contexts.find((c) => c.current);
  if (named && !found) {
    const where = picked ? 'sandbox.dockerContext' : 'DOCKER_CONTEXT';
    throw new EndpointError(
      `${where} names docker context '${named}', which does not exist: \`docker context ls\` lists them (add one with \`docker context create\`).`,
    );
  }
  if (!found) return builtInEndpoint('docker');
  const source: EndpointSource = picked ? 'setting' : named ? 'DOCKER_CONTEXT' : "docker's current context";
  if (!found.endpoint) return { runtime: 'docker', name: found.name, source, remote: false };
  const endpoint = fromAddress('docker', found.endpoint, source, found.name);
  const tls = /^tcp:/i.test(found.endpoint) && input.inspect ? parseDockerContextTls(await input.inspect(found.name)) : undefined;
  return tls ? { ...endpoint, tls } : endpoint;
}

/** The endpoint `command` (the runtime's CLI) talks to, asking the CLI for its list only when needed. */
export function detectEndpoint(
  runtime: RuntimeName,
  command: string,
  options: { env?: NodeJS.ProcessEnv; selection?: EngineSelection | undefined; timeoutMs?: number } = {},
): Promise<EngineEndpoint> {
  const env = options.env ?? process.env;
  // The list itself is asked without --connection/--context: a name that does not exist would fail it.
  const cli = { timeoutMs: options.timeoutMs ?? 20_000, plain: true, ...(options.env ? { env: options.env } : {}) };
  const input: EndpointInput = {
    env,
    selection: options.selection,
    list: async () =>
      (
        await runCli(
          command,
          runtime === 'podman' ? ['system', 'connection', 'list', '--format', 'json'] : ['context', 'ls', '--format', '{{json .}}'],
          cli,
        )
      ).stdout,
    // Its plain output is the JSON array on every docker version (older ones lack `--format json`).
    inspect: async (name) => (await runCli(command, ['context', 'inspect', name], cli)).stdout,
  };
  return runtime === 'podman' ? podmanEndpoint(input) : dockerEndpoint(input);
}

/** A remote endpoint for people ("tcp://host:2376", "connection 'box' (ssh://core@box)"); undefined for a local one. */
export function remoteEndpointText(endpoint: EngineEndpoint): string | undefined {
  if (!endpoint.remote) return undefined;
  const kind = endpoint.runtime === 'podman' ? 'connection' : 'context';
  if (!endpoint.name) return endpoint.address ?? 'a remote engine';
  return endpoint.address ? `${kind} '${endpoint.name}', ${endpoint.address}` : `${kind} '${endpoint.name}'`;
}

/** The endpoint for people: "remote engine tcp://host:2376 (DOCKER_HOST, TLS)", "connection 'box' (ssh://core@box/run/podman.sock) (podman's default connection)". */
export function endpointText(endpoint: EngineEndpoint): string {
  const where = endpoint.remote ? 'remote engine' : 'local engine';
  const what = endpoint.name
    ? `${endpoint.runtime === 'podman' ? 'connection' : 'context'} '${endpoint.name}'${endpoint.address ? ` (${where} ${endpoint.address})` : ` (${where})`}`
    : endpoint.address
      ? `${where} ${endpoint.address}`
      : `${where} (the CLI's own default)`;
  const how =
    endpoint.source === 'setting' ? `sandbox.${endpoint.runtime === 'podman' ? 'podmanConnection' : 'dockerContext'}` : endpoint.source;
  const tls = endpoint.tls === 'verified' ? ', TLS' : endpoint.tls === 'unverified' ? ', TLS without verifying the server' : '';
  return `${what} (${how}${tls})`;
}
