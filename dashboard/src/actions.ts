// The actions an operator can take, one entry per POST /queues/<q>/<name>.
// Each says what it will change (the confirmation question, with the number
// of jobs it affects, read from the broker just before) and then does it.
// Pause and resume change no job and are not confirmed.
import { BrokerClient } from './broker_client';

export interface ActionInput {
  broker: BrokerClient;
  token: string | undefined;
  queue: string;
  /** The job of a one-job action (retry-dead without all, delete-job, cancel). */
  jobId: string;
  /** retry-dead: every dead job of the queue. */
  all: boolean;
}

export interface Action {
  /** Asked (with the count) before the action runs; undefined: not confirmed. */
  question?: (input: ActionInput) => Promise<string>;
  /** Does it; answers the message shown after it. */
  run: (input: ActionInput) => Promise<string>;
  /** The action needs a job id. */
  needsJob: boolean;
}

async function deadCount(i: ActionInput): Promise<number> {
  return (await i.broker.getQueueStats(i.token, i.queue)).stats.dead;
}

function plural(n: number): string {
  return `${n} job${n === 1 ? '' : 's'}`;
}

export const ACTIONS: Record<string, Action> = {
  pause: {
    needsJob: false,
    run: async (i) => {
      await i.broker.pauseQueue(i.token, i.queue);
      return `Queue ${i.queue} is paused: it accepts jobs but hands none to workers until resumed.`;
    },
  },
  resume: {
    needsJob: false,
    run: async (i) => {
      await i.broker.resumeQueue(i.token, i.queue);
      return `Queue ${i.queue} is resumed.`;
    },
  },
  'retry-dead': {
    needsJob: false,
    question: async (i) =>
      i.all
        ? `Move all dead jobs of queue ${i.queue} back to pending? This affects ${plural(await deadCount(i))}.`
        : `Move dead job ${i.jobId} of queue ${i.queue} back to pending? This affects 1 job.`,
    run: async (i) => {
      const { moved } = await i.broker.retryDead(i.token, i.queue, i.all ? 'all' : [i.jobId]);
      return `Moved ${plural(moved)} back to pending.`;
    },
  },
  'purge-dead': {
    needsJob: false,
    question: async (i) => `Remove all dead jobs of queue ${i.queue} for good? This affects ${plural(await deadCount(i))}.`,
    run: async (i) => {
      const { purged } = await i.broker.purgeDead(i.token, i.queue);
      return `Removed ${plural(purged)}.`;
    },
  },
  'delete-job': {
    needsJob: true,
    question: async (i) => `Delete job ${i.jobId} of queue ${i.queue}, whatever its state, for good? This affects 1 job.`,
    run: async (i) => {
      await i.broker.deleteJob(i.token, i.queue, i.jobId);
      return `Deleted job ${i.jobId}.`;
    },
  },
  cancel: {
    needsJob: true,
    question: async (i) =>
      `Cancel job ${i.jobId} of queue ${i.queue}? This affects 1 job: a pending job becomes dead at once, an active one is asked to stop.`,
    run: async (i) => {
      const { cancel_requested } = await i.broker.cancel(i.token, i.queue, i.jobId);
      return cancel_requested
        ? `Job ${i.jobId} was running: its worker was asked to stop; it becomes dead when it does.`
        : `Job ${i.jobId} is cancelled (dead).`;
    },
  },
};
