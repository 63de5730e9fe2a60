/** Payload / result encoding shared by Client and Worker. */

/**
 * Bytes pass through unchanged (Buffer, any Uint8Array view, ArrayBuffer);
 * `undefined` is empty; any other value is encoded as JSON (UTF-8).
 */
export function encodeValue(value: unknown): Buffer {
  if (value === undefined) return Buffer.alloc(0);
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  const text = JSON.stringify(value);
  if (text === undefined) {
    throw new TypeError(`jobwire: cannot encode a value of type ${typeof value} as JSON`);
  }
  return Buffer.from(text, 'utf8');
}

/** Decodes UTF-8 JSON bytes; throws a SyntaxError on bad JSON. */
export function decodeJson<T = unknown>(bytes: Buffer): T {
  return JSON.parse(bytes.toString('utf8')) as T;
}

/** int64 fields arrive as numbers (LOADER_OPTIONS longs: Number); unset ones as 0. */
export function toNumber(v: string | number | null | undefined): number {
  if (v === undefined || v === null || v === '') return 0;
  return typeof v === 'number' ? v : Number(v);
}
