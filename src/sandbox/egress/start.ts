// The proxy a container's kernel reaches for sandbox.network: the real one, listening on the
// socket its folder holds (container/egress-link.ts makes the folder and mounts it).
import type { StartEgressProxy } from '../container/egress-link.ts';
import { EgressProxy } from './proxy.ts';

export const startEgressProxy: StartEgressProxy = async (options) => {
  const proxy = new EgressProxy(options);
  await proxy.listen();
  return proxy;
};
