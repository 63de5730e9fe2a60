// HTML built from tagged templates in which every interpolated value is
// escaped unless it is already Html (the output of another `html` template or
// of `raw`). Pages are composed only from these, so no value that came from
// the broker, the URL or a form reaches the page unescaped.

/** A fragment of HTML that is safe to insert as it is. */
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** Escapes the five characters that matter in text and in quoted attributes. */
export function escapeHtml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

type Value = Html | string | number | boolean | null | undefined | readonly Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  return escapeHtml(String(value));
}

/** html`<p>${x}</p>`: x escaped (arrays joined, null/undefined/false omitted). */
export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1];
  return new Html(out);
}

/** Marks text the caller built itself (never user data) as HTML. */
export function raw(text: string): Html {
  return new Html(text);
}
