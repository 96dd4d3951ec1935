// Where a test MCP server's program is: its bundle when test/run.mjs made them (CEM_TEST_FIXTURES,
// test/fixture-bundles.mjs), else its source. Either runs as `node <file> [args]`. The
// integration files and the host suite (whose extension host inherits the variable) use it.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export type FixtureName = 'confirm' | 'exposure' | 'fixture' | 'hostile' | 'image' | 'oauth' | 'relay';

/** `repo`: the checkout the sources are in (the host suite runs elsewhere); the current folder by default. */
export function fixtureProgram(name: FixtureName, repo = '.'): string {
  const bundles = process.env.CEM_TEST_FIXTURES;
  const bundle = bundles ? join(bundles, `${name}-server.mjs`) : undefined;
  return bundle && existsSync(bundle) ? resolve(bundle) : resolve(repo, `test/fixtures/${name}-server.ts`);
}
