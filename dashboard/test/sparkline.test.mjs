// sparkline (src/sparkline.ts, built into dist/): 0 at the bottom over a
// faint zero line, the highest value below the top edge, a label for
// screen readers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sparkline } from '../dist/sparkline.js';

const ys = (svg) => [...svg.matchAll(/(-?[\d.]+),(-?[\d.]+)/g)].map((m) => Number(m[2]));

test('0 on the zero line, the highest value below the top edge, a flat line apart from the top', () => {
  const svg = sparkline([0, 5, 10], 'depth', 120, 48).text;
  assert.match(svg, /<line class="zero" x1="0" y1="47" x2="120" y2="47"/);
  assert.deepEqual(ys(svg), [47, 27.5, 8]);
  const flat = ys(sparkline([7, 7, 7], 'flat', 300, 48).text);
  assert.ok(flat.every((y) => y === 8), flat.join(','));
  assert.ok(ys(sparkline([3], 'one', 120, 24).text).every((y) => y >= 2));
  assert.deepEqual(ys(sparkline([], 'none', 120, 24).text), [23, 23]);
  assert.match(sparkline([1], 'Depth of <q>', 120, 24).text, /role="img" aria-label="Depth of &lt;q&gt;"/);
});
