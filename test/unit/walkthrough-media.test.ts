// The walkthrough's media are files the package carries: each markdown page, and each picture
// in every theme kind VS Code picks from (light, dark, hc, hcLight), with its alt text; none in
// images/themes/, which the package leaves out.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { WALKTHROUGH_KEYS, WALKTHROUGH_STEP_IDS } from '../../src/extension/walkthrough-steps.ts';

interface Media {
  markdown?: string;
  svg?: string;
  image?: string | Partial<Record<'light' | 'dark' | 'hc' | 'hcLight', string>>;
  altText?: string;
}

test("every walkthrough step's media is a packaged file, its picture in each theme kind", () => {
  const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
    contributes: { walkthroughs: Array<{ steps: Array<{ id: string; media: Media }> }> };
  };
  for (const step of manifest.contributes.walkthroughs.flatMap((w) => w.steps)) {
    const { image, markdown, svg, altText } = step.media;
    const files =
      image === undefined
        ? [markdown ?? svg]
        : typeof image === 'string'
          ? [image]
          : (['light', 'dark', 'hc', 'hcLight'] as const).map((kind) => image[kind]);
    if (image !== undefined) assert.ok(altText?.trim(), `step ${step.id}: a picture without alt text`);
    for (const file of files) {
      assert.ok(file, `step ${step.id}: no media, or a theme kind without its picture`);
      assert.ok(existsSync(file), `step ${step.id}: ${file} does not exist`);
      assert.ok(!file.startsWith('images/themes/'), `step ${step.id}: ${file} is left out of the package`);
    }
  }
});

test('each walkthrough key names the step it completes, by the id VS Code gives that step', () => {
  const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as {
    publisher: string;
    name: string;
    contributes: { walkthroughs: Array<{ id: string; steps: Array<{ id: string; completionEvents?: string[] }> }> };
  };
  const walkthrough = manifest.contributes.walkthroughs[0]!;
  for (const [name, key] of Object.entries(WALKTHROUGH_KEYS) as Array<[keyof typeof WALKTHROUGH_KEYS, string]>) {
    const step = walkthrough.steps.find((s) => s.completionEvents?.includes(`onContext:${key}`));
    assert.ok(step, `no step completes on ${key}`);
    assert.equal(WALKTHROUGH_STEP_IDS[name], `${manifest.publisher}.${manifest.name}#${walkthrough.id}#${step.id}`);
  }
});
