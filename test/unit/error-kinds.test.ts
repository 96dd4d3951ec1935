// One taxonomy of request failures: each error class says its kind, the run log's outcome
// follows from the kind, and anything else is "failed".
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfirmationDeclinedError, ConfirmationNeededError } from '../../src/bridge/proxy/confirm.ts';
import { ServerError, ServerUnavailableError } from '../../src/bridge/proxy/connection.ts';
import { ToolDeniedError, UnknownServerError, UnknownToolError } from '../../src/bridge/proxy/hub.ts';
import { ProxyLimitError } from '../../src/bridge/proxy/limits.ts';
import { outcomeOf } from '../../src/bridge/sandbox-api/host-methods.ts';
import { kindOf } from '../../src/shared/error-kinds.ts';
import { ConsentNeededError } from '../../src/state/consent.ts';

test('every error a request can meet says its kind, and the run log outcome follows from it', () => {
  const cases: Array<[Error, string, string]> = [
    [new ToolDeniedError('x'), 'denied', 'denied'],
    [new UnknownServerError('x'), 'unknown-server', 'failed'],
    [new UnknownToolError('x'), 'unknown-tool', 'failed'],
    [new ServerUnavailableError('x'), 'unavailable', 'failed'],
    [new ProxyLimitError('x'), 'too-large', 'failed'],
    [new ConsentNeededError('x'), 'needs-consent', 'denied'],
    [new ServerError('x', -32602, null), 'server-error', 'failed'],
    [new ConfirmationDeclinedError('x'), 'declined', 'declined'],
    [new ConfirmationNeededError('x'), 'needs-confirmation', 'denied'],
    [new TypeError('x'), 'failed', 'failed'],
  ];
  assert.deepEqual(
    cases.map(([error]) => [kindOf(error), outcomeOf(error)]),
    cases.map(([, kind, outcome]) => [kind, outcome]),
  );
  // A kind is believed only when it is one of the taxonomy's.
  assert.equal(kindOf(Object.assign(new Error('x'), { kind: 'root' })), 'failed');
  assert.equal(kindOf('not an error'), 'failed');
});
