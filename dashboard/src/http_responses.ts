// The headers every answer of the dashboard carries (SECURITY_HEADERS: a
// Content-Security-Policy that allows only the dashboard's own script and
// style, no framing, no sniffing), and the two plain answers: a whole body
// (send) and a redirect after a form (redirect). Neither is cached.
import * as http from 'node:http';
import { Html } from './html';

export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
};

/** Answers `status` with `body` whole (an Html page by default). */
export function send(res: http.ServerResponse, status: number, body: Html | string, type = 'text/html; charset=utf-8'): void {
  const text = body instanceof Html ? body.text : body;
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text), ...SECURITY_HEADERS });
  res.end(text);
}

/** Answers 204 No Content. */
export function noContent(res: http.ServerResponse): void {
  res.writeHead(204, { 'cache-control': 'no-store', ...SECURITY_HEADERS });
  res.end();
}

/** Answers 303 See Other to `location`. */
export function redirect(res: http.ServerResponse, location: string): void {
  res.writeHead(303, { location, 'cache-control': 'no-store', ...SECURITY_HEADERS });
  res.end();
}
