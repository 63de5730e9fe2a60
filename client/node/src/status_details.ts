/**
 * The broker's error details (proto/jobwire/v1/broker.proto, "Error
 * details"): every error the broker sends carries, in the binary trailer
 * "grpc-status-details-bin", a google.rpc.Status whose details hold a
 * google.rpc.ErrorInfo (domain "jobwire.dev", a stable reason, metadata),
 * plus a google.rpc.BadRequest (one field violation) with INVALID_FIELD and a
 * google.rpc.RetryInfo where the broker knows how long to wait.
 *
 * The google.rpc / google.protobuf messages are decoded with protobufjs from
 * the JSON descriptor build.sh compiled from googleapis' status.proto and
 * error_details.proto (src/generated/rpc_status_descriptor.ts, .proto field
 * names): no .proto text is read or parsed at run time (hence
 * protobufjs/light, which has no parser).
 */
import { Root, type Type } from 'protobufjs/light';
import { RPC_STATUS_DESCRIPTOR } from './generated/rpc_status_descriptor';

/** The ErrorInfo domain of the broker's errors. */
export const ERROR_DOMAIN = 'jobwire.dev';

/** The metadata key (trailer) of the binary google.rpc.Status. */
export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';

/** What the details of one error say; see JobwireError for each field. */
export interface ErrorDetails {
  /** ErrorInfo.reason of the "jobwire.dev" ErrorInfo; '' when there is none. */
  reason: string;
  /** That ErrorInfo's metadata ({} when none). */
  metadata: Record<string, string>;
  /** BadRequest: the first field violation's field path. */
  field?: string;
  /** RetryInfo.retry_delay in ms, rounded up to a whole ms. */
  retryDelayMs?: number;
}

interface Types {
  status: Type;
  errorInfo: Type;
  badRequest: Type;
  retryInfo: Type;
}

let types: Types | undefined;

function rpcTypes(): Types {
  if (!types) {
    const root = Root.fromJSON(RPC_STATUS_DESCRIPTOR as Parameters<typeof Root.fromJSON>[0]);
    types = {
      status: root.lookupType('google.rpc.Status'),
      errorInfo: root.lookupType('google.rpc.ErrorInfo'),
      badRequest: root.lookupType('google.rpc.BadRequest'),
      retryInfo: root.lookupType('google.rpc.RetryInfo'),
    };
  }
  return types;
}

// Plain-object shapes (toObject, .proto field names) of what is read.
interface AnyObject { type_url?: string; value?: Uint8Array }
interface StatusObject { details?: AnyObject[] }
interface ErrorInfoObject { reason?: string; domain?: string; metadata?: Record<string, string> }
interface BadRequestObject { field_violations?: Array<{ field?: string; description?: string }> }
interface RetryInfoObject { retry_delay?: { seconds?: number; nanos?: number } }

/** The message type name of an Any's type_url ("type.googleapis.com/google.rpc.ErrorInfo" -> "google.rpc.ErrorInfo"). */
function anyTypeName(typeUrl: string): string {
  return typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
}

/**
 * Decodes one serialized google.rpc.Status. Returns undefined when the bytes
 * are not a google.rpc.Status. Of its details, reads the first ErrorInfo
 * whose domain is "jobwire.dev" (ErrorInfos of other domains are ignored),
 * the first BadRequest and the first RetryInfo; other detail types, and a
 * detail that does not decode, are skipped. Never throws.
 */
export function decodeStatusDetails(bin: Uint8Array): ErrorDetails | undefined {
  let t: Types;
  let status: StatusObject;
  try {
    t = rpcTypes();
    status = t.status.toObject(t.status.decode(bin)) as StatusObject;
  } catch {
    return undefined;
  }
  const out: ErrorDetails = { reason: '', metadata: {} };
  let info = false;
  for (const any of status.details ?? []) {
    if (typeof any.type_url !== 'string' || !any.value) continue;
    try {
      switch (anyTypeName(any.type_url)) {
        case 'google.rpc.ErrorInfo': {
          if (info) break;
          const ei = t.errorInfo.toObject(t.errorInfo.decode(any.value)) as ErrorInfoObject;
          if (ei.domain !== ERROR_DOMAIN) break;
          info = true;
          out.reason = ei.reason ?? '';
          out.metadata = { ...(ei.metadata ?? {}) };
          break;
        }
        case 'google.rpc.BadRequest': {
          if (out.field !== undefined) break;
          const br = t.badRequest.toObject(t.badRequest.decode(any.value)) as BadRequestObject;
          const v = br.field_violations?.[0];
          if (v) out.field = v.field ?? '';
          break;
        }
        case 'google.rpc.RetryInfo': {
          if (out.retryDelayMs !== undefined) break;
          const ri = t.retryInfo.toObject(t.retryInfo.decode(any.value), { longs: Number }) as RetryInfoObject;
          const d = ri.retry_delay;
          if (d) {
            const ms = Math.ceil((d.seconds ?? 0) * 1000 + (d.nanos ?? 0) / 1e6);
            if (Number.isFinite(ms)) out.retryDelayMs = Math.max(0, ms);
          }
          break;
        }
        default:
          break;
      }
    } catch {
      // A detail that does not decode is skipped.
    }
  }
  return out;
}

/**
 * The details of an error from its grpc-js metadata (a ServiceError's
 * `metadata`, a StatusObject's `metadata`: grpc-js leaves the
 * "grpc-status-details-bin" trailer there). Undefined when there is no
 * such trailer or it does not decode. Never throws.
 */
export function detailsFromMetadata(metadata: unknown): ErrorDetails | undefined {
  const md = metadata as { get?: unknown } | null | undefined;
  if (!md || typeof md.get !== 'function') return undefined;
  let values: unknown[];
  try {
    values = (md.get as (key: string) => unknown[]).call(md, STATUS_DETAILS_KEY);
  } catch {
    return undefined;
  }
  const bin = Array.isArray(values) ? values.find((v): v is Uint8Array => v instanceof Uint8Array) : undefined;
  return bin ? decodeStatusDetails(bin) : undefined;
}
