// What a proxied server sends besides answers, on timers: a tool list change is relisted after a
// debounce, one at a time and at most every 2 s; its log messages are relayed at most 10 a
// second, then counted; the note that it floods notifications is logged at most every 10 s.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, mock, test } from 'node:test';
import type { ServerLogMessage } from '../../src/bridge/proxy/link.ts';
import { Relister } from '../../src/bridge/proxy/relister.ts';
import { DropNotice, ServerLogLimiter } from '../../src/bridge/proxy/server-notices.ts';
import { FakeClock } from '../helpers/fake-clock.ts';

beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 }));
afterEach(() => mock.timers.reset());

/** Lets a relisting that was told to finish run its end (setImmediate is not mocked). */
const settled = () => new Promise((resolve) => setImmediate(resolve));

/** A relister whose relistings are counted and end when the test says. */
function relister(current = new Set(['a'])) {
  const started: string[] = [];
  const finish: Array<() => void> = [];
  const r = new Relister<string>(
    (link) => {
      started.push(link);
      return new Promise<void>((resolve) => finish.push(resolve));
    },
    (link) => current.has(link),
  );
  return { r, started, finish, current };
}

test('changes within the debounce make one relisting; a change during it makes one more, 2 s after the last', async () => {
  const { r, started, finish } = relister();
  r.changed('a');
  r.changed('a');
  mock.timers.tick(199);
  assert.deepEqual(started, []);
  mock.timers.tick(1);
  assert.deepEqual(started, ['a']);
  r.changed('a');
  r.changed('a');
  finish.shift()!();
  await settled();
  mock.timers.tick(1999);
  assert.equal(started.length, 1);
  mock.timers.tick(1);
  assert.equal(started.length, 2);
  finish.shift()!();
  await settled();
  mock.timers.tick(10_000);
  assert.equal(started.length, 2);
});

test('a link that is no longer current is not relisted, and cancel drops a relisting not started', () => {
  const { r, started, current } = relister();
  r.changed('b');
  mock.timers.tick(1000);
  assert.deepEqual(started, []);
  r.changed('a');
  r.cancel();
  mock.timers.tick(1000);
  assert.deepEqual(started, []);
  r.changed('a');
  current.delete('a');
  mock.timers.tick(1000);
  assert.deepEqual(started, []);
});

test('log messages: 10 a second pass, the rest are counted and said once the second is over', () => {
  const clock = new FakeClock();
  const limiter = new ServerLogLimiter('noisy', clock);
  const passed: ServerLogMessage[] = [];
  const sink = (m: ServerLogMessage) => passed.push(m);
  for (let i = 0; i < 15; i++) limiter.pass({ level: 'info', data: i }, sink);
  assert.deepEqual(
    passed.map((m) => m.data),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
  clock.advance(999);
  assert.equal(passed.length, 10, 'nothing said before the second is over');
  clock.advance(1);
  limiter.pass({ level: 'info', data: 'later' }, sink);
  assert.deepEqual(passed.slice(10), [
    { level: 'warning', logger: 'code-execution-mode', data: '5 log messages of server noisy dropped (more than 10 a second)' },
    { level: 'info', data: 'later' },
  ]);
});

test('a burst of 40 that ends: 10 pass and the 30 dropped are said when the second is over, once', () => {
  const clock = new FakeClock();
  const limiter = new ServerLogLimiter('burst', clock);
  const passed: ServerLogMessage[] = [];
  for (let i = 0; i < 40; i++) limiter.pass({ level: 'info', data: i }, (m) => passed.push(m));
  clock.advance(5000);
  assert.equal(passed.length, 11);
  assert.deepEqual(passed[10], {
    level: 'warning',
    logger: 'code-execution-mode',
    data: '30 log messages of server burst dropped (more than 10 a second)',
  });
});

test('the flood note is logged at most every 10 s', () => {
  const lines: string[] = [];
  const notice = new DropNotice('flood', 50, (line) => lines.push(line));
  notice.dropped(1);
  notice.dropped(2);
  mock.timers.tick(9_999);
  notice.dropped(3);
  mock.timers.tick(1);
  notice.dropped(4);
  assert.deepEqual(lines, [
    'server flood: sends more than 50 notifications a second; 1 dropped so far and its output paused (proxy.maxNotificationsPerSecond)',
    'server flood: sends more than 50 notifications a second; 4 dropped so far and its output paused (proxy.maxNotificationsPerSecond)',
  ]);
});
