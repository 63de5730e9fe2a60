// An inline SVG sparkline of a series of numbers (a queue's depth over the
// last minutes), with a text alternative for screen readers.
import { Html, html, raw } from './html';

/** A polyline scaled to width x height; an empty series draws a flat line. */
export function sparkline(values: readonly number[], label: string, width = 120, height = 24): Html {
  const series = values.length === 1 ? [values[0], values[0]] : values;
  const max = Math.max(1, ...series);
  const n = series.length;
  const step = n > 1 ? width / (n - 1) : width;
  const points = (n > 0 ? series : [0, 0])
    .map((v, i) => `${(i * step).toFixed(1)},${(height - 1 - (v / max) * (height - 2)).toFixed(1)}`)
    .join(' ');
  return html`<svg class="spark" role="img" aria-label="${label}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><polyline fill="none" stroke="currentColor" stroke-width="1.5" points="${raw(points)}"/></svg>`;
}
