import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { abortError } from './call_options';
import { JobwireError } from './errors';
import { BROKER_DESCRIPTOR } from './generated/broker_descriptor';
import type { ProtoGrpcType } from './generated/broker';
import type { BrokerServiceClient as BrokerClient } from './generated/jobwire/v1/BrokerService';

/**
 * Loader options. They must match the flags build.sh passes to
 * proto-loader-gen-types (--longs=Number --enums=String --defaults --oneofs),
 * so that the generated types describe what grpc-js really hands us: int64
 * fields arrive as numbers (epoch ms and durations: well within 2^53; a
 * decimal string per field would cost a Long division each, for every field
 * of every delivered job),
 * enums as their names, bytes as Buffers, omitted fields as their defaults.
 * keepCase is applied when build.sh compiles the .proto (camelCase names in
 * the descriptor); the others when messages are converted.
 */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
};

let cached: ProtoGrpcType | undefined;

/**
 * The Broker service and its messages, built from the descriptor that
 * build.sh compiled from proto/jobwire/v1/broker.proto
 * (src/generated/broker_descriptor.ts): no .proto file is read or parsed at
 * run time.
 */
export function loadProto(): ProtoGrpcType {
  if (cached) return cached;
  const def = protoLoader.fromJSON(BROKER_DESCRIPTOR as Parameters<typeof protoLoader.fromJSON>[0], LOADER_OPTIONS);
  cached = grpc.loadPackageDefinition(def) as unknown as ProtoGrpcType;
  return cached;
}

export const DEFAULT_ADDRESS = 'localhost:50051';
export const DEFAULT_TIMEOUT_MS = 10_000;

export function defaultAddress(): string {
  const env = process.env.JOBWIRE_ADDR;
  return env && env.length > 0 ? env : DEFAULT_ADDRESS;
}

/**
 * The default service config of every channel (Client and Worker):
 * round_robin, so that a target resolving to several brokers
 * (`dns:///jobwire-headless.ns:50051`, a Kubernetes headless Service) gets
 * its calls spread over all of them, where gRPC's own default (pick_first)
 * would put every call of the process on one. A Worker's Claim stream stays
 * on one broker while its AckBatch / Fail / ExtendLease calls spread: a
 * broker that settles a job of another broker's stream tells that broker,
 * which frees the stream's slot at once (broker.proto, Claim). A target
 * resolving to one address behaves as with pick_first. It is only a default:
 * a service config the resolver supplies wins (grpc-js), and so does a
 * `'grpc.service_config'` in the user's channelOptions (makeStub).
 */
export const ROUND_ROBIN_SERVICE_CONFIG = JSON.stringify({ loadBalancingConfig: [{ round_robin: {} }] });

/**
 * Channel options: reconnect quickly after a broker restart (grpc-js waits
 * 1 s doubling to 120 s by default; calls made meanwhile fail fast with
 * UNAVAILABLE, so a long channel backoff would stall the worker's own
 * reconnect loop). grpc-js reads no grpc.min_reconnect_backoff_ms.
 * makeStub adds the default service config.
 */
export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 5000,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.max_send_message_length': 64 * 1024 * 1024,
};

/**
 * Bearer token and TLS options, shared by Client and Worker (same meaning as
 * the C++ client's ClientOptions).
 */
export interface SecurityOptions {
  /**
   * Bearer token sent as `authorization: Bearer <token>` metadata on every
   * call. Unset or empty: $JOBWIRE_TOKEN, else no token.
   */
  token?: string;
  /**
   * Use TLS. TLS is also on when any of tlsRootCa, tlsClientCert,
   * tlsClientKey is set. Default: plaintext.
   */
  tls?: boolean;
  /** CA certificate(s) to trust: PEM text or the path of a PEM file. Unset: the system roots. */
  tlsRootCa?: string;
  /** Client certificate chain for mutual TLS: PEM text or the path of a PEM file (with tlsClientKey). */
  tlsClientCert?: string;
  /** Private key of tlsClientCert: PEM text or the path of a PEM file. */
  tlsClientKey?: string;
}

/** What a Client / Worker connects with: channel credentials and per-call metadata. */
export interface Connection {
  credentials: grpc.ChannelCredentials;
  /** Fresh metadata for one call (the authorization header when there is a token). */
  metadata: () => grpc.Metadata;
}

const PEM_MARKER = '-----BEGIN';

function configError(message: string): JobwireError {
  return new JobwireError(grpc.status.INVALID_ARGUMENT, message);
}

/**
 * `value` itself when it is PEM text, else the content of the file it names.
 * Errors never quote anything that could be key material: a value that does
 * not look like a path (multi-line or very long) is not echoed.
 */
export function loadPem(value: string, option: string): Buffer {
  if (value.includes(PEM_MARKER)) return Buffer.from(value, 'utf8');
  const pathLike = !/[\r\n]/.test(value) && value.length <= 4096;
  try {
    return fs.readFileSync(value);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException)?.code ?? 'read error';
    if (!pathLike) {
      throw configError(`jobwire: ${option} is neither PEM text (no "${PEM_MARKER}") nor the path of a readable file`);
    }
    throw configError(`jobwire: cannot read PEM file ${JSON.stringify(value)} (${option}): ${code}`);
  }
}

/** The effective token: `token` when non-empty, else $JOBWIRE_TOKEN, else none. */
export function resolveToken(token?: string): string | undefined {
  if (token !== undefined && token !== null && typeof token !== 'string') {
    throw new TypeError('jobwire: token must be a string');
  }
  if (token) return token;
  const env = process.env.JOBWIRE_TOKEN;
  return env && env.length > 0 ? env : undefined;
}

/**
 * Builds the channel credentials and the per-call metadata from the security
 * options. Throws JobwireError INVALID_ARGUMENT on a PEM file that cannot be
 * read, a certificate without its key (or the reverse), PEM that does not
 * parse, or `credentials` given together with TLS options. The token never
 * appears in an error.
 */
export function makeConnection(options: SecurityOptions & { credentials?: grpc.ChannelCredentials }): Connection {
  const token = resolveToken(options.token);
  // grpc-js would reject such a value with an error that quotes it.
  if (token !== undefined && !/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(token)) {
    throw configError('jobwire: the token may hold only printable ASCII characters, without leading or trailing spaces');
  }
  const authorization = token === undefined ? undefined : `Bearer ${token}`;
  const metadata = (): grpc.Metadata => {
    const md = new grpc.Metadata();
    if (authorization !== undefined) md.set('authorization', authorization);
    return md;
  };

  for (const k of ['tlsRootCa', 'tlsClientCert', 'tlsClientKey'] as const) {
    const v = options[k];
    if (v !== undefined && v !== null && typeof v !== 'string') {
      throw new TypeError(`jobwire: ${k} must be a string (PEM text or a file path)`);
    }
  }
  const tlsOn = options.tls === true || !!options.tlsRootCa || !!options.tlsClientCert || !!options.tlsClientKey;
  if (!tlsOn) {
    return { credentials: options.credentials ?? grpc.credentials.createInsecure(), metadata };
  }
  if (options.credentials) {
    throw configError('jobwire: give either credentials or the tls options (tls, tlsRootCa, tlsClientCert, tlsClientKey), not both');
  }
  if (!!options.tlsClientCert !== !!options.tlsClientKey) {
    throw configError('jobwire: tlsClientCert and tlsClientKey must be given together (mutual TLS)');
  }
  const rootCa = options.tlsRootCa ? loadPem(options.tlsRootCa, 'tlsRootCa') : null;
  const cert = options.tlsClientCert ? loadPem(options.tlsClientCert, 'tlsClientCert') : null;
  const key = options.tlsClientKey ? loadPem(options.tlsClientKey, 'tlsClientKey') : null;
  let credentials: grpc.ChannelCredentials;
  try {
    credentials = grpc.credentials.createSsl(rootCa, key, cert);
  } catch (e) {
    // Node's TLS errors name the OpenSSL failure, never the PEM content.
    throw configError(`jobwire: invalid TLS certificate or key: ${(e as Error)?.message ?? String(e)}`);
  }
  return { credentials, metadata };
}

/**
 * A BrokerService stub on its own channel to `address`: CHANNEL_OPTIONS and
 * ROUND_ROBIN_SERVICE_CONFIG as the default service config, under the
 * caller's `channelOptions`, which win key by key (its own
 * `'grpc.service_config'` included). Insecure credentials when none are
 * given.
 */
export function makeStub(
  address: string,
  credentials?: grpc.ChannelCredentials,
  channelOptions?: grpc.ChannelOptions,
): BrokerClient {
  const proto = loadProto();
  const Ctor = proto.jobwire.v1.BrokerService;
  return new Ctor(address, credentials ?? grpc.credentials.createInsecure(), {
    ...CHANNEL_OPTIONS,
    'grpc.service_config': ROUND_ROBIN_SERVICE_CONFIG,
    ...(channelOptions ?? {}),
  });
}

/**
 * Promise wrapper of a unary call with a deadline (and the connection's
 * metadata); failures reject with a JobwireError carrying the status code and
 * the broker's message. With a `signal` (call_options.ts): already aborted,
 * rejects at once with abortError(signal) and sends nothing; aborted while in
 * flight, cancels the call (`call.cancel()`) and rejects at once with
 * abortError(signal). The abort listener is removed when the call settles.
 */
export function unary<Req, Res>(
  stub: BrokerClient,
  method: string,
  req: Req,
  timeoutMs: number,
  metadata: grpc.Metadata = new grpc.Metadata(),
  signal?: AbortSignal,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const fn = (stub as unknown as Record<string, Function>)[method];
    const deadline = new Date(Date.now() + timeoutMs);
    let settled = false;
    let onAbort: (() => void) | undefined;
    const call: grpc.ClientUnaryCall = fn.call(stub, req, metadata, { deadline }, (err: grpc.ServiceError | null, res: Res) => {
      if (settled) return; // aborted: already rejected
      settled = true;
      if (onAbort) signal!.removeEventListener('abort', onAbort);
      if (err) reject(JobwireError.from(err));
      else resolve(res);
    });
    if (signal) {
      onAbort = () => {
        if (settled) return;
        settled = true;
        call.cancel();
        reject(abortError(signal));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    }
  });
}

export type { BrokerClient };
