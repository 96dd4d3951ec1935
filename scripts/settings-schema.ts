// Writes the JSON Schema of the extension's settings into package.json, generated from the
// configuration's zod schema, with the order the Settings editor lists them in
// (src/extension/settings/manifest-settings.ts says how); each setting's description and scope
// stay as written. Run after changing either:
// `npm run settings-schema`. test/unit/settings-schema.test.ts fails while package.json differs.
import { readFileSync, writeFileSync } from 'node:fs';
import { renderManifest } from '../src/extension/settings/manifest-settings.ts';

const file = new URL('../package.json', import.meta.url);
const before = readFileSync(file, 'utf8');
const after = renderManifest(before);
if (after === before) {
  console.log('package.json: the settings already match the configuration schema.');
} else {
  writeFileSync(file, after);
  console.log('package.json: settings written from the configuration schema.');
}
