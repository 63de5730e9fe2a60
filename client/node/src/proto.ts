import * as path from 'node:path';
import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { JobwireError } from './errors';
import type { ProtoGrpcType } from './generated/broker';
import type { BrokerClient } from './generated/jobwire/v1/Broker';

/**
 * Loader options. They must match the flags build.sh passes to
 * proto-loader-gen-types (--longs=String --enums=String --defaults --oneofs),
 * so that the generated types describe what grpc-js really hands us: int64
 * fields arrive as decimal strings (converted to numbers at the API edge),
 * enums as their names, bytes as Buffers, omitted fields as their defaults.
 */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** Where build.sh copies proto/jobwire/v1/broker.proto inside the package. */
export function protoRoot(): string {
  return path.resolve(__dirname, '..', 'proto');
}

let cached: ProtoGrpcType | undefined;

export function loadProto(): ProtoGrpcType {
  if (cached) return cached;
  const root = protoRoot();
  const file = path.join(root, 'jobwire', 'v1', 'broker.proto');
  if (!fs.existsSync(file)) {
    throw new Error(`jobwire: ${file} is missing; run client/node/build.sh (npm run build)`);
  }
  const def = protoLoader.loadSync('jobwire/v1/broker.proto', { ...LOADER_OPTIONS, includeDirs: [root] });
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
 * Channel options: reconnect quickly after a broker restart (grpc-js waits
 * 1 s doubling to 120 s by default; calls made meanwhile fail fast with
 * UNAVAILABLE, so a long channel backoff would stall the worker's own
 * reconnect loop).
 */
export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.min_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 5000,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.max_send_message_length': 64 * 1024 * 1024,
};

export function makeStub(
  address: string,
  credentials?: grpc.ChannelCredentials,
  channelOptions?: grpc.ChannelOptions,
): BrokerClient {
  const proto = loadProto();
  const Ctor = proto.jobwire.v1.Broker;
  return new Ctor(address, credentials ?? grpc.credentials.createInsecure(), {
    ...CHANNEL_OPTIONS,
    ...(channelOptions ?? {}),
  });
}

/**
 * Promise wrapper of a unary call with a deadline; failures reject with a
 * JobwireError carrying the status code and the broker's message.
 */
export function unary<Req, Res>(
  stub: BrokerClient,
  method: string,
  req: Req,
  timeoutMs: number,
): Promise<Res> {
  return new Promise<Res>((resolve, reject) => {
    const fn = (stub as unknown as Record<string, Function>)[method];
    const deadline = new Date(Date.now() + timeoutMs);
    fn.call(stub, req, { deadline }, (err: grpc.ServiceError | null, res: Res) => {
      if (err) reject(JobwireError.from(err));
      else resolve(res);
    });
  });
}

export type { BrokerClient };
