// An inline SVG sparkline of a series of numbers (a queue's depth over the
// last minutes), with a text alternative for screen readers.
import { Html, html, raw } from './html';

/**
 * A polyline scaled to width x height over a faint zero line, 0 at the
 * bottom and the series' highest value (at least 1) a few pixels below the
 * top, so that a flat line at its highest stays apart from what is above
 * the chart; an empty series draws a flat line at 0.
 */
export function sparkline(values: readonly number[], label: string, width = 120, height = 24): Html {
  const series = values.length === 1 ? [values[0], values[0]] : values;
  const max = Math.max(1, ...series);
  const n = series.length;
  const step = n > 1 ? width / (n - 1) : width;
  const bottom = height - 1;
  const top = Math.max(2, Math.round(height / 6));
  const points = (n > 0 ? series : [0, 0])
    .map((v, i) => `${(i * step).toFixed(1)},${(bottom - (v / max) * (bottom - top)).toFixed(1)}`)
    .join(' ');
  return html`<svg class="spark" role="img" aria-label="${label}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><line class="zero" x1="0" y1="${bottom}" x2="${width}" y2="${bottom}" stroke="currentColor" stroke-opacity="0.25" stroke-width="1"/><polyline fill="none" stroke="currentColor" stroke-width="1.5" points="${raw(points)}"/></svg>`;
}
