/**
 * The queue weights a Worker's Claim carries (ClaimRequest.weights;
 * WorkerOptions.weights): none for strict order (every free slot to the
 * first of its queues with due jobs), else one per queue, in the order of
 * its queues, over which the broker splits the stream's free slots while
 * several of them have due jobs.
 */

/** Each of ClaimRequest.weights is 1..MAX_CLAIM_WEIGHT (broker.proto). */
export const MAX_CLAIM_WEIGHT = 1000;

function describe(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : v === null ? 'null' : typeof v === 'object' ? typeof v : String(v);
}

/**
 * The `weights` of a ClaimRequest from WorkerOptions.weights: [] when unset
 * or empty (strict order), else the weight of each of `queues`, in their
 * order. Throws TypeError unless `weights` is a plain object naming exactly
 * the queues of `queues`, each with an integer weight 1..MAX_CLAIM_WEIGHT.
 */
export function claimWeights(queues: readonly string[], weights: unknown): number[] {
  if (weights === undefined || weights === null) return [];
  const proto: unknown = typeof weights === 'object' ? Object.getPrototypeOf(weights) : undefined;
  if (typeof weights !== 'object' || (proto !== Object.prototype && proto !== null)) {
    throw new TypeError('jobwire Worker: options.weights must be a plain object mapping each queue of ' +
      `options.queues to its weight (an integer 1..${MAX_CLAIM_WEIGHT}), got ${Array.isArray(weights) ? 'an array' : describe(weights)}`);
  }
  const given = weights as Record<string, unknown>;
  const names = Object.keys(given);
  if (names.length === 0) return [];
  for (const name of names) {
    if (!queues.includes(name)) {
      throw new TypeError(`jobwire Worker: options.weights names queue ${JSON.stringify(name)}, ` +
        'which is not one of options.queues');
    }
  }
  return queues.map((queue) => {
    if (!Object.prototype.hasOwnProperty.call(given, queue)) {
      throw new TypeError(`jobwire Worker: options.weights has no weight for queue ${JSON.stringify(queue)}; ` +
        'with weights, every queue of options.queues needs one');
    }
    const w = given[queue];
    if (typeof w !== 'number' || !Number.isInteger(w) || w < 1 || w > MAX_CLAIM_WEIGHT) {
      throw new TypeError(`jobwire Worker: options.weights[${JSON.stringify(queue)}] must be an integer ` +
        `1..${MAX_CLAIM_WEIGHT}, got ${describe(w)}`);
    }
    return w;
  });
}
