// Links the pages build (page_layout.ts), without a broker.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jobUrl, parentUrl } from '../dist/page_layout.js';

test('a parent is linked in its own queue: an id in the job\'s, a ref "<queue>/<id>" in the one it names', () => {
  assert.equal(parentUrl('emails', '000000000007'), jobUrl('emails', '000000000007'));
  assert.equal(parentUrl('emails', 'orders/000000000042.p3'), '/queues/orders/jobs/000000000042.p3');
  assert.equal(parentUrl('a b', 'x y/1'), '/queues/x%20y/jobs/1');
});
