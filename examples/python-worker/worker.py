"""Example jobwire worker in Python: handles `send-email` jobs on the
`emails` queue (JSON payload {"to": "...", "subject": "..."}).

It can share the queue with workers in other languages: a job whose type a
worker does not know is failed for a retry, so another worker takes it.

    JOBWIRE_ADDR=localhost:50051 python worker.py [--concurrency 4]
"""
import argparse
import logging
import time

from jobwire import NonRetryableError, Worker


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", default=None, help="broker host:port (default $JOBWIRE_ADDR or localhost:50051)")
    ap.add_argument("--concurrency", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")

    worker = Worker(args.addr, queues=["emails"], concurrency=args.concurrency,
                    on_outcome=lambda o: print("  outcome %s job=%s attempt=%d %s"
                                               % (o.kind, o.job.id, o.job.attempt,
                                                  o.fail_outcome or (o.code.name if o.code else "")),
                                               flush=True))

    @worker.handler("send-email")
    def send_email(job):
        email = job.json() or {}
        to, subject = email.get("to"), email.get("subject", "")
        if not to or "@" not in to:
            # A bad address never gets better: no retries.
            raise NonRetryableError("invalid recipient %r" % (to,))
        print("[python] sending email job=%s attempt=%d/%d to=%s subject=%r"
              % (job.id, job.attempt, job.max_attempts, to, subject), flush=True)
        time.sleep(0.2)  # pretend to talk to an SMTP server
        return {"sent_to": to, "by": "python-worker"}

    print("[python] worker %s waiting for send-email jobs on 'emails' (Ctrl-C to stop)"
          % worker.worker_id, flush=True)
    worker.run()  # stops gracefully on SIGTERM / SIGINT


if __name__ == "__main__":
    main()
