// RateTracker (src/rate_tracker.ts, built into dist/) against a scripted
// stand-in for BrokerClient.subscribe, with a test clock: the streams it
// opens (100 queues each), what it counts, the window, the per-minute
// history, and that a gap or a closed stream drops counts rather than
// report a partial rate. The same tracker against a real broker:
// dashboard.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RateTracker } from '../dist/rate_tracker.js';

/** A BrokerClient stand-in: records each subscribe and lets the test feed or end it. */
function fakeClient() {
  const streams = [];
  return {
    streams,
    subscribe(token, req, onMessage, onEnd) {
      const s = { token, req, onMessage, onEnd, cancelled: false };
      streams.push(s);
      return () => { s.cancelled = true; onEnd({ code: 1, details: 'cancelled' }); };
    },
  };
}

const ev = (queue, kind) => ({ queue, kind: `EVENT_KIND_${kind}`, job_id: '1', at_ms: 0 });

test('one stream per 100 queues, for the token; a changed list opens them again', () => {
  const client = fakeClient();
  const t = new RateTracker(client, 'tok', 2000, () => 0);
  const names = Array.from({ length: 150 }, (_, i) => `q${String(i).padStart(3, '0')}`);
  t.follow(names);
  assert.equal(client.streams.length, 2);
  assert.deepEqual(client.streams.map((s) => s.req.queues.length), [100, 50]);
  assert.equal(client.streams[0].token, 'tok');
  assert.deepEqual(client.streams[0].req.kinds, ['EVENT_KIND_ENQUEUED', 'EVENT_KIND_COMPLETED', 'EVENT_KIND_RETRY', 'EVENT_KIND_DEAD']);
  t.follow([...names].reverse());
  assert.equal(client.streams.length, 2, 'the same queues in another order: nothing reopened');
  t.follow(['a']);
  assert.deepEqual(client.streams.map((s) => s.cancelled), [true, true, false]);
  t.stop();
  assert.equal(client.streams[2].cancelled, true);
});

test('a queue added gets a stream of its own and the others keep theirs and their counts; a removed one is no longer counted', () => {
  const client = fakeClient();
  const t = new RateTracker(client, undefined, 2000, () => 5000);
  t.follow(['a', 'b']);
  client.streams[0].onMessage({ events: [ev('a', 'ENQUEUED')], subscribed: true, events_missed: false });
  t.follow(['a', 'b', 'c']);
  assert.equal(client.streams.length, 2);
  assert.equal(client.streams[0].cancelled, false);
  assert.deepEqual(client.streams[1].req.queues, ['c']);
  assert.equal(t.rates('a').enqueued, 1, 'a kept its count');
  t.follow(['b', 'c']);
  assert.equal(client.streams[0].cancelled, false, 'b still needs the stream');
  assert.equal(t.rates('a'), undefined);
  client.streams[0].onMessage({ events: [ev('a', 'ENQUEUED'), ev('b', 'ENQUEUED')], subscribed: false, events_missed: false });
  assert.equal(t.rates('a'), undefined, 'a removed queue is not counted again');
  assert.equal(t.rates('b').enqueued, 1);
  t.follow(['c']);
  assert.equal(client.streams[0].cancelled, true, 'none of its queues followed: closed');
  // Queues added one at a time: at most 8 streams beyond the fewest, then all reopened in full.
  const many = ['c'];
  for (let i = 0; i < 9; i++) {
    many.push(`n${i}`);
    t.follow(many);
  }
  const open = client.streams.filter((s) => !s.cancelled);
  assert.equal(open.length, 1, 'reopened as one stream of 10 queues');
  assert.equal(open[0].req.queues.length, 10);
  t.stop();
});

test('counts per kind from the subscription on, over a window that grows to 60 s; completed per minute', () => {
  const client = fakeClient();
  let now = 120_000; // minute 2
  const t = new RateTracker(client, undefined, 2000, () => now);
  t.follow(['q']);
  const s = client.streams[0];
  assert.equal(t.rates('q'), undefined, 'not subscribed yet: unknown');
  s.onMessage({ events: [ev('q', 'ENQUEUED')], subscribed: false, events_missed: false });
  assert.equal(t.rates('q'), undefined, 'events before the subscription are not counted');
  s.onMessage({ events: [], subscribed: true, events_missed: false });
  assert.deepEqual(t.rates('q'), { enqueued: 0, completed: 0, failed: 0, windowS: 1 });
  now += 10_000;
  s.onMessage({ events: [ev('q', 'ENQUEUED'), ev('q', 'ENQUEUED'), ev('q', 'COMPLETED'), ev('q', 'RETRY'), ev('q', 'DEAD'), ev('other', 'ENQUEUED')], subscribed: false, events_missed: false });
  assert.deepEqual(t.rates('q'), { enqueued: 2, completed: 1, failed: 2, windowS: 10 });
  now += 55_000; // 65 s after the subscription: the events of second 10 are 55 s old, still in
  assert.deepEqual(t.rates('q'), { enqueued: 2, completed: 1, failed: 2, windowS: 60 });
  now += 6_000; // 61 s old: out of the window, still in the hour
  assert.deepEqual(t.rates('q'), { enqueued: 0, completed: 0, failed: 0, windowS: 60 });
  s.onMessage({ events: [ev('q', 'COMPLETED'), ev('q', 'COMPLETED')], subscribed: false, events_missed: false });
  assert.deepEqual(t.completedPerMinute('q'), [1, 2], 'minute 2: one, minute 3: two');
  now += 70 * 60_000;
  assert.deepEqual(t.completedPerMinute('q').length, 60, 'an hour at most');
  assert.ok(t.completedPerMinute('q').every((n) => n === 0));
  t.stop();
});

test('a gap drops the counts: events missed restart them, a stream that ends makes the rates unknown until it is back', async () => {
  const client = fakeClient();
  let now = 0;
  const t = new RateTracker(client, undefined, 20, () => now);
  t.follow(['q']);
  const first = client.streams[0];
  first.onMessage({ events: [], subscribed: true, events_missed: false });
  first.onMessage({ events: [ev('q', 'ENQUEUED')], subscribed: false, events_missed: false });
  now = 5000;
  first.onMessage({ events: [ev('q', 'ENQUEUED')], subscribed: false, events_missed: true });
  assert.deepEqual(t.rates('q'), { enqueued: 1, completed: 0, failed: 0, windowS: 1 }, 'counted again from the gap');
  first.onEnd({ code: 14, details: 'broker gone' });
  assert.equal(t.rates('q'), undefined);
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(client.streams.length, 2, 'subscribed again after retryMs');
  client.streams[1].onMessage({ events: [], subscribed: true, events_missed: false });
  assert.deepEqual(t.rates('q'), { enqueued: 0, completed: 0, failed: 0, windowS: 1 });
  t.follow(['r']);
  client.streams[1].onMessage({ events: [ev('q', 'ENQUEUED')], subscribed: true, events_missed: false });
  assert.equal(t.rates('q'), undefined, 'a closed stream counts nothing more');
  t.stop();
});
