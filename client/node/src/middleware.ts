/**
 * Handler middleware (Worker.use): Koa-style layers around every handler of
 * a Worker, the first registered the outermost.
 */
import type { Handler, Job } from './job';

/**
 * One layer: gets the job (the handler's Job) and `next`, which runs the
 * next layer (the handler, for the innermost) and resolves with what it
 * returns or rejects with what it throws. What the middleware returns (or
 * throws) is what the Worker settles the job with: it may change the result,
 * turn an error into a result, or throw. `next` may be called once.
 */
export type Middleware = (job: Job, next: () => Promise<unknown>) => unknown | Promise<unknown>;

/**
 * Runs `handler` on `job` inside `layers` (layers[0] outermost). Always a
 * promise: a layer or handler that throws synchronously rejects it.
 */
export function runLayers(layers: readonly Middleware[], handler: Handler, job: Job): Promise<unknown> {
  const dispatch = (i: number): Promise<unknown> => {
    if (i === layers.length) return Promise.resolve().then(() => handler(job));
    let called = false;
    const next = (): Promise<unknown> => {
      if (called) return Promise.reject(new Error('jobwire Worker: a middleware called next() more than once'));
      called = true;
      return dispatch(i + 1);
    };
    return Promise.resolve().then(() => layers[i](job, next));
  };
  return dispatch(0);
}
