// Which tools of a server sandboxed code may call: deny wins, then an allow list if present.
import type { ServerConfig } from '../../config/schema.ts';

export function toolAllowed(config: ServerConfig, tool: string): boolean {
  if (config.denyTools.includes(tool)) return false;
  return config.allowTools === undefined || config.allowTools.includes(tool);
}
