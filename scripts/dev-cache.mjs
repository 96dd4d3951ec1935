// The developer cache folder (Node 24, code-server, the compile cache, test images' inputs):
// CEM_CACHE, else ~/.cache/code-execution-mode-dev, as dev-env.sh and demo.sh read it (an empty
// value counts as unset there too).
import { homedir } from 'node:os';
import { join } from 'node:path';

export const DEV_CACHE = process.env.CEM_CACHE || join(homedir(), '.cache', 'code-execution-mode-dev');

/** The Node 24 that dev-env.sh and demo.sh install there for an older Node (it may be absent). */
export const CACHED_NODE_24 = join(DEV_CACHE, 'node24', 'node_modules', 'n24', 'bin', 'node');
