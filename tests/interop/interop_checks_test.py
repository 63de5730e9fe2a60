"""Each check of interop_checks.py fails on a doctored run (and a sound run
passes): worker logs written to files and read back as the harness reads
them, GetJob answers built by hand. Run with pytest (ctest interop_checks_test)."""

import json

import pytest
from jobwire.v1 import broker_pb2

import interop_checks
from interop_checks import Freeze, LogTail

LANGS = ["python", "go"]

# A sound run of two languages. ja and jc: held by python / go, whose worker
# was frozen past the lease; attempt 2 ran in the other language, and the
# frozen worker's late Ack was refused. jb, jd: failed once, completed in the
# other language. je: its first delivery was dropped as expired. jf: its Ack
# stayed unanswered, and was stored. jg: always fails, ends DEAD.
LOGS = {
    "python-1.log": [
        "start ja 1 python", "hold ja 1 python",
        "start jc 2 python", "ack_ok jc 2 python",
        "start jb 1 python", "fail_ok jb 1 python RETRY_SCHEDULED",
        "start jd 2 python", "ack_ok jd 2 python",
        "expired_dropped je 1 python",
        "start jg 1 python", "fail_ok jg 1 python RETRY_SCHEDULED",
        "ack_error ja 1 python FAILED_PRECONDITION",
    ],
    "go-1.log": [
        "start jc 1 go", "hold jc 1 go",
        "start ja 2 go", "ack_ok ja 2 go",
        "start jb 2 go", "ack_ok jb 2 go",
        "start jd 1 go", "fail_ok jd 1 go RETRY_SCHEDULED",
        "start je 2 go", "ack_ok je 2 go",
        "start jf 1 go", "ack_unknown jf 1 go UNAVAILABLE",
        "start jg 2 go", "fail_ok jg 2 go DEAD",
        "ack_error jc 1 go FAILED_PRECONDITION",
    ],
}
# job id -> (n, attempts, language named in the result; None: DEAD)
JOBS = {"ja": (0, 2, "go"), "jc": (1, 2, "python"), "jb": (2, 2, "go"),
        "jd": (3, 2, "python"), "je": (4, 2, "go"), "jf": (5, 1, "go"), "jg": (6, 2, None)}
FREEZES = [("python", "python-1.log", "ja"), ("go", "go-1.log", "jc")]


def broker_job(job_id, n, attempts, lang):
    if lang is None:
        return broker_pb2.Job(id=job_id, state=broker_pb2.JOB_STATE_DEAD, attempts=attempts,
                              error="always fails")
    return broker_pb2.Job(id=job_id, state=broker_pb2.JOB_STATE_COMPLETED, attempts=attempts,
                          result=json.dumps({"n": n, "lang": lang}).encode())


# The producer's trace/span of the jobs enqueued with a trace (jb, jd: their
# runs log a span line in each language).
TRACE_B = "4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7"
TRACE_D = "0af7651916cd43dd8448eb211c80319c b7ad6b7169203331"
TRACES = {"jb": TRACE_B, "jd": TRACE_D}
SPAN_LINES = {
    "start jb 1 python": ["start jb 1 python", f"span jb 1 python {TRACE_B}"],
    "start jd 2 python": ["start jd 2 python", f"span jd 2 python {TRACE_D}"],
    "start jb 2 go": ["start jb 2 go", f"span jb 2 go {TRACE_B}"],
    "start jd 1 go": ["start jd 1 go", f"span jd 1 go {TRACE_D}"],
}


def run_checks(tmp_path, logs=None, jobs=None, freezes=None, results=None, traces=None):
    """check() over the given (or the sound) logs, jobs, freezes and traces,
    with some stored results replaced ({job id: bytes}); returns its
    failures."""
    logs, jobs = logs or doctored({}), jobs or JOBS
    traces = TRACES if traces is None else traces
    freezes = FREEZES if freezes is None else freezes
    events = {}
    for name, lines in logs.items():
        path = tmp_path / name
        path.write_text("".join(line + "\n" for line in lines))
        for job_id, e in LogTail(str(path)).read():
            events.setdefault(job_id, []).append(e)
    broker_jobs = {job_id: broker_job(job_id, *spec) for job_id, spec in jobs.items()}
    for job_id, result in (results or {}).items():
        broker_jobs[job_id].result = result
    job_n = {job_id: spec[0] for job_id, spec in jobs.items()}
    frozen = [Freeze(lang, str(tmp_path / log), job_id, 1, 2.5, jobs[job_id][1])
              for lang, log, job_id in freezes]
    run = interop_checks.Run(
        langs=LANGS, concurrency=4, job_n=job_n,
        expect_dead={j for j, spec in jobs.items() if spec[2] is None},
        broker_jobs=broker_jobs, events=events, freezes=frozen, traces=traces)
    failures, _ = interop_checks.check(run)
    return failures


def doctored(replace):
    """LOGS, with the span lines of the traced jobs, with lines replaced:
    {old line: new lines}."""
    replace = dict(SPAN_LINES, **replace)
    return {name: [new for line in lines for new in replace.get(line, [line])]
            for name, lines in LOGS.items()}


def assert_fails(failures, *wanted):
    assert failures, "the doctored run passed every check"
    for w in wanted:
        assert any(w in f for f in failures), f"no failure mentions {w!r}: {failures}"


def test_sound_run_passes(tmp_path):
    assert run_checks(tmp_path) == []


def test_tail_leaves_an_unfinished_line(tmp_path):
    path = tmp_path / "w.log"
    path.write_text("start ja 1 go\nack_ok ja")
    tail = LogTail(str(path))
    assert [job_id for job_id, _ in tail.read()] == ["ja"]
    with open(path, "a") as f:
        f.write(" 1 go\n")
    assert [(job_id, e.kind) for job_id, e in tail.read()] == [("ja", "ack_ok")]


def test_late_ack_accepted_after_the_new_lease_acked(tmp_path):
    logs = doctored({"ack_error ja 1 python FAILED_PRECONDITION": ["ack_ok ja 1 python"]})
    assert_fails(run_checks(tmp_path, logs=logs),
                 "Ack accepted for attempt 1 in python", "completed 2 times",
                 "no late Ack of a superseded lease from python was refused")


def test_late_ack_accepted_before_the_new_lease_acked(tmp_path):
    # The frozen worker's Ack won; the new lease's Ack was refused.
    logs = doctored({"ack_error ja 1 python FAILED_PRECONDITION": ["ack_ok ja 1 python"],
                     "ack_ok ja 2 go": ["ack_error ja 2 go FAILED_PRECONDITION"]})
    jobs = dict(JOBS, ja=(0, 2, "python"))
    assert_fails(run_checks(tmp_path, logs=logs, jobs=jobs),
                 "Ack accepted for attempt 1 in python",
                 "python worker's late Ack of job ja (attempt 1, superseded) ended "
                 "ack_ok (attempt 1 in python)")


def test_result_names_another_language(tmp_path):
    jobs = dict(JOBS, jb=(2, 2, "python"))
    assert_fails(run_checks(tmp_path, jobs=jobs),
                 "job jb: result names 'python', but go logged the Ack")


def test_result_n_differs_from_the_payload(tmp_path):
    results = {"jd": json.dumps({"n": 99, "lang": "python"}).encode()}
    assert_fails(run_checks(tmp_path, results=results),
                 "job jd: result has n=99, the enqueued payload n=3")


def test_result_not_json(tmp_path):
    assert_fails(run_checks(tmp_path, results={"jd": b"ok"}),
                 "job jd: result b'ok' is not a JSON object")


def test_unexpected_job_id(tmp_path):
    logs = doctored({"ack_ok jb 2 go": ["ack_ok jb 2 go", "start jz 1 go", "ack_ok jz 1 go"]})
    assert_fails(run_checks(tmp_path, logs=logs),
                 "1 job id(s) in the workers' logs that no Enqueue returned: jz")


def test_run_without_superseded_lease(tmp_path):
    # Nothing frozen: ja and jc ran once each and were acked.
    logs = {
        "python-1.log": [line for line in LOGS["python-1.log"]
                         if " ja " not in line and " jc " not in line]
        + ["start jc 1 python", "ack_ok jc 1 python"],
        "go-1.log": [line for line in LOGS["go-1.log"]
                     if " ja " not in line and " jc " not in line]
        + ["start ja 1 go", "ack_ok ja 1 go"],
    }
    jobs = dict(JOBS, ja=(0, 1, "go"), jc=(1, 1, "python"))
    assert_fails(run_checks(tmp_path, logs=logs, jobs=jobs, freezes=[]),
                 "no late Ack of a superseded lease from python was refused",
                 "no late Ack of a superseded lease from go was refused")


def test_worker_resumed_before_its_job_moved_on(tmp_path):
    failures = run_checks(tmp_path, freezes=[("python", "python-1.log", "jf")] + FREEZES[1:])
    assert_fails(failures, "python worker resumed before job jf (attempt 1) was claimed again")


@pytest.mark.parametrize("kind", ["ack_ok", "fail_ok"])
def test_answer_after_expired_drop(tmp_path, kind):
    logs = doctored({"expired_dropped je 1 python":
                     ["expired_dropped je 1 python", f"{kind} je 1 python RETRY_SCHEDULED"]})
    assert_fails(run_checks(tmp_path, logs=logs),
                 "job je: attempt 1 answered after its delivery was dropped as expired")


def test_ack_unknown_is_not_a_completion(tmp_path):
    # An unknown Ack before the accepted one is no second completion; alone
    # (jf), it explains COMPLETED.
    logs = doctored({"ack_ok jb 2 go": ["ack_unknown jb 2 go UNAVAILABLE", "ack_ok jb 2 go"]})
    assert run_checks(tmp_path, logs=logs) == []
    # Without it, jf's completion is unexplained.
    logs = doctored({"ack_unknown jf 1 go UNAVAILABLE": []})
    assert_fails(run_checks(tmp_path, logs=logs), "job jf: COMPLETED with no Ack in the logs")


def test_handler_span_with_another_parent(tmp_path):
    logs = doctored({"start jb 2 go": ["start jb 2 go",
                                       "span jb 2 go 4bf92f3577b34da6a3ce929d0e0e4736 "
                                       "1111111111111111"]})
    assert_fails(run_checks(tmp_path, logs=logs),
                 f"job jb attempt 2 in go: handler span trace/parent "
                 f"4bf92f3577b34da6a3ce929d0e0e4736 1111111111111111, the producer's "
                 f"trace/span {TRACE_B}")


def test_traced_run_without_a_span_line(tmp_path):
    logs = doctored({"start jd 1 go": ["start jd 1 go"]})
    assert_fails(run_checks(tmp_path, logs=logs),
                 "job jd attempt 1 ran in go without a span line")


def test_span_of_a_job_enqueued_without_a_trace(tmp_path):
    logs = doctored({"start jc 2 python": ["start jc 2 python",
                                           f"span jc 2 python {TRACE_B}"]})
    assert_fails(run_checks(tmp_path, logs=logs),
                 "job jc was enqueued without a trace but its run (attempt 2 in python)")


def test_a_language_with_no_traced_run(tmp_path):
    # Only jf was enqueued with a trace, and it ran in go alone: python's
    # trace propagation went unchecked.
    logs = {name: [new for line in lines
                   for new in ([line, f"span jf 1 go {TRACE_B}"] if line == "start jf 1 go"
                               else [line])]
            for name, lines in LOGS.items()}
    failures = run_checks(tmp_path, logs=logs, traces={"jf": TRACE_B})
    assert_fails(failures, "no run in python of a job enqueued with a trace")
    assert not any("in go" in f for f in failures), failures
