// What every page shares: the viewer's context (PageContext), the URLs of a
// queue and of a job, the layout around a page's body, the CSRF field of a
// POST form, and a broker error as an alert with a sentence for its code.
// The pages are in pages.ts, the forms in page_forms.ts, the Workers page in
// workers_page.ts; all are built from Html (src/html.ts escapes every value).
import { Html, html } from './html';

/** What every page needs to know about the viewer. */
export interface PageContext {
  csrf: string;
  readOnly: boolean;
  /** A logout button is shown (logins are on and this session has one). */
  loggedIn: boolean;
}

export function queueUrl(queue: string, params: Record<string, string> = {}): string {
  const qs = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '')).toString();
  return `/queues/${encodeURIComponent(queue)}${qs ? `?${qs}` : ''}`;
}

export function jobUrl(queue: string, id: string): string {
  return `/queues/${encodeURIComponent(queue)}/jobs/${encodeURIComponent(id)}`;
}

/**
 * The page of parent `entry` (Job.depends_on) of a job of `queue`: a job id
 * of that queue, or a ref "<queue>/<id>" to a job of another queue
 * (docs/semantics.md, "Parents in other queues").
 */
export function parentUrl(queue: string, entry: string): string {
  const slash = entry.indexOf('/');
  return slash < 0 ? jobUrl(queue, entry) : jobUrl(entry.slice(0, slash), entry.slice(slash + 1));
}

export function layout(ctx: PageContext | undefined, title: string, body: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · jobwire</title>
<link rel="stylesheet" href="/static/style.css">
<script src="/static/live.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/">jobwire</a>
<nav aria-label="Main"><a href="/">Queues</a> <a href="/schedules">Schedules</a> <a href="/workers">Workers</a></nav>
${ctx?.readOnly ? html`<span class="badge">read-only</span>` : ''}
${ctx?.loggedIn ? html`<form method="post" action="/logout" class="inline">${csrfField(ctx)}<button type="submit">Log out</button></form>` : ''}
</header>
<main id="main" tabindex="-1">
<h1>${title}</h1>
${body}
</main>
</body>
</html>
`;
}

/** The hidden input carrying the session's CSRF token; every POST form has it. */
export function csrfField(ctx: PageContext): Html {
  return html`<input type="hidden" name="csrf" value="${ctx.csrf}">`;
}

/** A broker error: `explanation` (else explainCode's sentence) and the broker's message. */
export function errorBox(code: number, details: string, explanation = explainCode(code)): Html {
  return html`<div class="error-box" role="alert"><strong>${explanation}</strong><p>${details}</p></div>`;
}

/** A sentence for the gRPC codes an operator can act on. */
export function explainCode(code: number): string {
  switch (code) {
    case 16:
      return 'The broker requires a valid token (UNAUTHENTICATED): log in again with an admin token (a dashboard started without --require_login never asks for one).';
    case 7:
      return 'Your token may not do this (PERMISSION_DENIED): it needs the admin permission on this queue.';
    case 5:
      return 'Not found (NOT_FOUND).';
    case 14:
      return 'The broker or its Redis cannot be reached right now (UNAVAILABLE): try again.';
    case 3:
      return 'The broker refused the request (INVALID_ARGUMENT).';
    case 9:
      return 'The job is not in a state that allows this (FAILED_PRECONDITION).';
    case 6:
      return 'It exists already (ALREADY_EXISTS).';
    case 4:
      return 'The broker did not answer in time (DEADLINE_EXCEEDED).';
    case 12:
      return 'The broker does not know this call (UNIMPLEMENTED): it is older than this dashboard; upgrade the brokers.';
    default:
      return `The broker answered with an error (code ${code}).`;
  }
}
