// A container's way out (sandbox.network): its private socket folder and the egress proxy that
// listens in it, made before the container starts (so that its kernel finds the socket and starts
// its forwarder) and ended with it. Only for a local engine on this machine's kernel: a remote one
// cannot mount the folder, and one in a VM (engines/vm.ts) does not carry the socket in it.
import type { SandboxConfig } from '../../config/schema.ts';
import type { EgressHandler } from '../egress/types.ts';
import { createSocketDir, networkEnabled, removeSocketDir, writePipIndex } from '../egress/socket-dir.ts';
import type { ProxyOutOfReach } from '../engines/vm.ts';

/** What a run needs of its container's proxy: whose requests these are, from when to when. */
export interface ContainerEgress {
  /** Requests from now on belong to this run (`handler` asks and records them; `signal` ends its waits). */
  beginRun(runId: string, handler: EgressHandler | undefined, signal: AbortSignal): void;
  /** The run ended: requests from now on belong to no run. */
  endRun(): void;
  close(): Promise<void>;
}

/** Starts a proxy listening on `socketPath` (mode 0666), for one container of `session`. */
export type StartEgressProxy = (options: {
  socketPath: string;
  session: string;
  network: () => SandboxConfig['network'];
}) => Promise<ContainerEgress>;

/** A container's folder (mounted into it) and its proxy; closed once, by whoever comes first. */
export interface EgressLink {
  dir: string;
  proxy: ContainerEgress;
  close(): Promise<void>;
}

/**
 * The folder and proxy for a new container, or undefined when sandbox.network lets nothing
 * through, no proxy is given, or the engine cannot reach the proxy (`outOfReach`: remote, or in a VM).
 */
export async function openEgress(
  start: StartEgressProxy | undefined,
  config: SandboxConfig,
  session: string,
  outOfReach: ProxyOutOfReach | undefined,
): Promise<EgressLink | undefined> {
  if (!start || !networkEnabled(config) || outOfReach) return undefined;
  const { dir, socket } = createSocketDir();
  let proxy: ContainerEgress;
  try {
    writePipIndex(dir, config);
    proxy = await start({ socketPath: socket, session, network: () => config.network });
  } catch (error) {
    removeSocketDir(dir);
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    dir,
    proxy,
    close: () =>
      (closing ??= proxy
        .close()
        .catch(() => undefined)
        .finally(() => removeSocketDir(dir))),
  };
}
