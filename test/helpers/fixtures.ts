// Where a test MCP server's program is: its bundle when test/run.mjs made them (CEM_TEST_FIXTURES,
// test/fixture-bundles.mjs), else its source. Either runs as `node <file> [args]`.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export type FixtureName = 'confirm' | 'exposure' | 'fixture' | 'hostile' | 'image' | 'oauth' | 'relay';

export function fixtureProgram(name: FixtureName): string {
  const bundles = process.env.CEM_TEST_FIXTURES;
  const bundle = bundles ? join(bundles, `${name}-server.mjs`) : undefined;
  return bundle && existsSync(bundle) ? resolve(bundle) : resolve(`test/fixtures/${name}-server.ts`);
}
