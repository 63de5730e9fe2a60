/**
 * Progress reports of a running job (ReportProgress; broker.proto): what a
 * report holds, and its request. Shared by Client.reportProgress and the
 * Worker's job.reportProgress.
 */
import { encodeValue } from './codec';
import type { ReportProgressRequest } from './generated/jobwire/v1/ReportProgressRequest';

/**
 * One progress report. It replaces the job's progress as a whole: a field
 * left out is cleared. At least one of them is required (else the broker
 * answers INVALID_ARGUMENT).
 */
export interface Progress {
  /** A whole percentage, 0..100 (the broker refuses others: INVALID_ARGUMENT naming `percent`). */
  percent?: number;
  /**
   * Bytes unchanged, `undefined` none, anything else JSON (as a payload); at
   * most 4096 bytes once encoded (INVALID_ARGUMENT naming `data`).
   */
  data?: unknown;
}

/**
 * The ReportProgressRequest of one report. Throws TypeError when `progress`
 * is not an object or `percent` is given but is not an integer (a
 * fraction would be cut silently on the wire), and what encodeValue throws
 * for `data`. The ranges are the broker's to check.
 */
export function progressRequest(queue: string, jobId: string, leaseToken: string, progress: Progress): ReportProgressRequest {
  if (typeof progress !== 'object' || progress === null) {
    throw new TypeError('jobwire: progress must be an object { percent?, data? }');
  }
  const req: ReportProgressRequest = { queue, jobId, leaseToken, data: encodeValue(progress.data) };
  const { percent } = progress;
  if (percent !== undefined && percent !== null) {
    if (typeof percent !== 'number' || !Number.isInteger(percent)) {
      throw new TypeError(`jobwire: progress.percent must be an integer 0..100, got ${String(percent)}`);
    }
    req.percent = percent;
  }
  return req;
}
