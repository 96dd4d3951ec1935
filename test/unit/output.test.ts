import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CappedText } from '../../src/sandbox/sessions/capped-text.ts';

test('short output is kept whole', () => {
  const text = new CappedText(100);
  text.append('abc');
  text.append('def');
  assert.equal(text.toString(), 'abcdef');
  assert.equal(text.truncated, false);
});

test('long output keeps head and tail and says how much was cut', () => {
  const text = new CappedText(10);
  for (let i = 0; i < 1000; i++) text.append(String(i % 10));
  assert.equal(text.omitted, 990);
  assert.equal(text.totalLength, 1000);
  const shown = text.toString();
  assert.ok(shown.startsWith('01234\n'), shown);
  assert.ok(shown.endsWith('\n56789'), shown);
  assert.match(shown, /\[990 characters omitted\]/);
});

test('one huge append is cut without keeping the middle', () => {
  const text = new CappedText(1000);
  text.append('a'.repeat(500) + 'm'.repeat(10_000_000) + 'z'.repeat(500));
  const shown = text.toString();
  assert.ok(shown.length < 1100);
  assert.ok(shown.startsWith('a'.repeat(500)));
  assert.ok(shown.endsWith('z'.repeat(500)));
});
