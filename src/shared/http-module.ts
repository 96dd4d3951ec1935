// Node's http module, required rather than imported: an ES module import of it makes Node build
// the module's facade, whose getters load Node's fetch (undici), tens of milliseconds of every
// bridge's start, for servers (the egress proxy, the OAuth callback) that few runs start.
import { createRequire } from 'node:module';
import type * as Http from 'node:http';

export const http = createRequire(import.meta.url)('node:http') as typeof Http;
