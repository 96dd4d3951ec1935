// Every relative link and image in README.md, CONTRIBUTING.md and docs/*.md points at a file
// that exists, and a `#fragment` at a heading of that file: the docs are split across files, so a
// moved section must not leave a dead link behind.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { test } from 'node:test';

const FILES = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
];

/** Markdown outside fenced code blocks and inline code, where links are links. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Targets of `[text](target)` and `![alt](target)`. */
function linkTargets(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

/** The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces to dashes. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const match of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const slug = match[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    out.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return out;
}

test('every relative link in the docs resolves to a file, and its fragment to a heading', () => {
  const broken: string[] = [];
  for (const file of FILES) {
    const text = readFileSync(file, 'utf8');
    for (const target of linkTargets(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, command:
      const [path, fragment] = target.split('#') as [string, string | undefined];
      const resolved = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)));
      if (!existsSync(resolved)) {
        broken.push(`${file}: ${target} (no file ${resolved})`);
        continue;
      }
      if (fragment !== undefined && resolved.endsWith('.md') && !anchors(readFileSync(resolved, 'utf8')).has(fragment)) {
        broken.push(`${file}: ${target} (no heading #${fragment} in ${resolved})`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('the check sees links: a README without them would pass vacuously', () => {
  const targets = linkTargets(readFileSync('README.md', 'utf8'));
  assert.ok(targets.includes('docs/security.md'));
  assert.ok(targets.includes('images/views.png'));
});
