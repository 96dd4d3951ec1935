// Relayed server requests in the run views: the reader gives each run the `relay` lines that
// name it (one relay may pause several runs; one at connect names none), drops lines the bridge
// never writes, follows them across rotation, and the panel and tooltip say them escaped.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseRunLog, RunLogReader, type RelayRecord } from '../../src/state/run-log/reader.ts';
import { RunLog } from '../../src/state/run-log/writer.ts';
import { relayRows, relaySummary, relayTable } from '../../src/extension/views/relay-text.ts';

const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

test('a relay line goes to every run it names, once each; one naming no known run makes no run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-relay-'));
  try {
    const log = new RunLog(dir);
    log.runStarted({ run: 'a', session: 'default', code: 'await mcp_everything.x()', timeoutMs: 1000 });
    log.runStarted({ run: 'b', session: 'other', code: 'await mcp_everything.y()', timeoutMs: 1000 });
    // Roots asked at connect: no run waited.
    log.relay({ server: 'fs', method: 'roots/list', runs: [], outcome: 'answered', waitedMs: 3.14159 });
    log.relay({
      server: 'everything',
      method: 'elicitation/create',
      runs: ['a', 'b', 'a'],
      outcome: 'answered',
      action: 'accept',
      waitedMs: 1234.5678,
    });
    log.relay({
      server: 'everything',
      method: 'sampling/createMessage',
      runs: ['b'],
      outcome: 'refused',
      waitedMs: 0,
      error: 'the client does not support sampling',
    });
    log.relay({ server: 'everything', method: 'elicitation/create', runs: ['gone'], outcome: 'timeout', waitedMs: 120_000 });
    log.close();
    const runs = parseRunLog(readFileSync(join(dir, 'runs.jsonl'), 'utf8'));
    assert.deepEqual(
      runs.map((r) => r.id),
      ['a', 'b'],
    );
    const [a, b] = runs;
    assert.deepEqual(
      a!.relays.map((r) => [r.server, r.method, r.outcome, r.action, r.waitedMs]),
      [['everything', 'elicitation/create', 'answered', 'accept', 1234.6]],
    );
    assert.deepEqual(
      b!.relays.map((r) => [r.method, r.outcome]),
      [
        ['elicitation/create', 'answered'],
        ['sampling/createMessage', 'refused'],
      ],
    );
    assert.equal(b!.relays[1]!.error, 'the client does not support sampling');
    assert.ok(!('runs' in a!.relays[0]!), 'the record does not carry the other runs');
    // The two runs' records are separate objects: one panel cannot change another's.
    assert.notEqual(a!.relays[0], b!.relays[0]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('relay lines the bridge never writes are skipped, the rest of the log is read', () => {
  const start = { type: 'run-start', run: 'r', session: 's', time: T(0), code: 'x' };
  const good = { type: 'relay', time: T(1), server: 'e', method: 'roots/list', runs: ['r'], outcome: 'answered', waitedMs: 2 };
  const lines = [
    start,
    { ...good, runs: 'r' },
    { ...good, runs: [1] },
    { ...good, waitedMs: 'soon' },
    { ...good, server: undefined },
    { ...good, runs: Array.from({ length: 1001 }, () => 'r') },
    good,
  ];
  const [run] = parseRunLog(lines.map((l) => JSON.stringify(l)).join('\n'));
  assert.equal(run!.relays.length, 1);
});

test('the reader follows relay lines across a rotation; a relay line alone does not count as a run', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cem-relay-rot-'));
  try {
    let log = new RunLog(dir);
    log.runStarted({ run: 'r', session: 'default', code: 'x', timeoutMs: 1000 });
    log.close();
    renameSync(join(dir, 'runs.jsonl'), join(dir, 'runs.1.jsonl'));
    log = new RunLog(dir);
    log.relay({ server: 'e', method: 'elicitation/create', runs: ['r'], outcome: 'answered', action: 'decline', waitedMs: 10 });
    log.close();
    const reader = new RunLogReader(dir, { minRuns: 1 });
    // The newest file names run r only through its relay, which makes no run: the older file,
    // with the run's start, is read too although one run would be enough.
    const runs = reader.runs();
    assert.equal(runs.length, 1);
    assert.equal(runs[0]!.code, 'x');
    assert.deepEqual(
      runs[0]!.relays.map((r) => r.action),
      ['decline'],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the panel table and the tooltip say each relay, escaped', () => {
  const relays: RelayRecord[] = [
    {
      time: T(1),
      server: '<img src=x onerror=alert(1)>',
      method: 'elicitation/create',
      outcome: 'answered',
      action: 'accept',
      waitedMs: 1500,
    },
    {
      time: T(2),
      server: 'e',
      method: 'sampling/createMessage',
      outcome: 'refused',
      waitedMs: 0.4,
      error: `"quoted" & ${'x'.repeat(3000)}`,
    },
  ];
  const rows = relayRows(relays);
  assert.ok(!rows.includes('<img'), rows);
  assert.ok(rows.includes('&lt;img src=x onerror=alert(1)&gt;'));
  assert.ok(rows.includes('answered (accept)') && rows.includes('1.5 s') && rows.includes('0 ms'), rows);
  assert.ok(rows.includes('&quot;quoted&quot; &amp;'), 'the error is escaped');
  assert.ok(!rows.includes('x'.repeat(501)), 'a long error is shortened');
  assert.equal((rows.match(/<tr class="bad">/g) ?? []).length, 1, 'only the refusal is marked');
  assert.match(relayTable(relays), /<th>server<\/th><th>method<\/th><th>outcome<\/th><th>waited<\/th>/);
  assert.equal(relayTable([]), '');
  assert.equal(relaySummary([]), '');
  assert.equal(relaySummary(relays.slice(0, 1)), ' · 1 request from servers');
  assert.equal(relaySummary(relays), ' · 2 requests from servers (1 not answered)');
});
