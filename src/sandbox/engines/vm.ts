// Whether a local engine runs its containers in a virtual machine (Docker Desktop, podman machine,
// colima, lima, Rancher Desktop, OrbStack, any engine on macOS or Windows), read from what the
// runtime check already asks: the engine's endpoint and its `info`. Such an engine shares this
// machine's folders, but its file sharing does not carry unix sockets, so the sandbox's network
// proxy (a socket, container/egress-link.ts) cannot reach the container: sandbox.network gives no
// network there, as on a remote engine. An engine none of these signals names keeps the network.
import { z } from 'zod';
import type { RuntimeName } from '../../config/schema.ts';
import { remoteEngine } from './workspace.ts';
import type { EngineEndpoint } from './endpoint.ts';

/** Socket folders of engines that run in a VM, in the address they are reached at. */
const VM_SOCKETS: ReadonlyArray<[RegExp, string]> = [
  [/\/\.docker\/(run|desktop)\/docker\.sock$/, 'Docker Desktop'],
  [/dockerDesktop/i, 'Docker Desktop'],
  [/\/\.colima\//, 'colima'],
  [/\/\.lima\//, 'lima'],
  [/\/\.rd\//, 'Rancher Desktop'],
  [/\/\.orbstack\//, 'OrbStack'],
  [/\/containers\/podman\/machine\/|podman-machine-/, 'podman machine'],
];

const dockerOs = z.object({ OperatingSystem: z.string() });

/**
 * The VM a local engine runs its containers in, for people ("Docker Desktop", "podman machine
 * 'podman-machine-default'"), or undefined when it runs them on this machine's kernel or nothing
 * says otherwise. `info`: the runtime's `info` as JSON; `platform`: this machine's OS.
 */
export function engineVm(
  runtime: RuntimeName,
  endpoint: EngineEndpoint | undefined,
  info: unknown,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (endpoint?.remote) return undefined;
  const os = runtime === 'docker' ? dockerOs.safeParse(info) : undefined;
  if (os?.success && os.data.OperatingSystem.startsWith('Docker Desktop')) return 'Docker Desktop';
  if (endpoint?.machine) return `podman machine '${endpoint.name ?? 'podman-machine-default'}'`;
  const address = endpoint?.address ?? '';
  const known = VM_SOCKETS.find(([pattern]) => pattern.test(address));
  if (known) return known[1];
  // endpoint.ts counts ssh to this machine's loopback as local: the VM of podman machine or lima.
  if (/^ssh:\/\//i.test(address)) return endpoint?.name ? `${runtime} connection '${endpoint.name}' (${address})` : address;
  // Containers of a Linux image run on a Linux kernel: on macOS and Windows, always a VM's.
  if (platform === 'darwin') return `${runtime} on macOS`;
  if (platform === 'win32') return `${runtime} on Windows`;
  return undefined;
}

/** Where the sandbox's network proxy cannot reach a container: a remote engine, or one that runs containers in a VM. */
export type ProxyOutOfReach = { remote: string } | { vm: string };

/** Why this runtime's containers cannot reach the proxy's socket, or undefined when they can (a local engine on this kernel). */
export function proxyOutOfReach(
  runtime: { name: RuntimeName; endpoint?: EngineEndpoint | undefined; vm?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): ProxyOutOfReach | undefined {
  const remote = remoteEngine(runtime.name, env, runtime.endpoint);
  if (remote) return { remote };
  return runtime.vm ? { vm: runtime.vm } : undefined;
}
