"""The tables of the benchmarks that compare variants of one run shape
round by round (observer_cost.py, limits_cost.py): a row per variant with
the median (range) of each figure over the rounds, jobs/s also as a ratio to
a base variant's run of the same round, and the runs round by round.
"""

import statistics

# The figures every variants table shows after jobs/s and its ratio:
# (header, the figure of one run, digits).
COMMON_COLUMNS = [
    ("Redis commands per job", lambda r: r["redis_commands_per_job"], 3),
    ("Redis CPU us per job", lambda r: r["redis_cpu_us_per_job"], 1),
    ("broker CPU us per job", lambda r: r["cpu_us_per_job"]["broker"], 1),
]


def fmt_range(values, digits=0):
    return (f"{statistics.median(values):,.{digits}f} "
            f"({min(values):,.{digits}f}-{max(values):,.{digits}f})")


def variant_table(variants, runs, base, columns):
    """Markdown lines: the header and a row per variant of `variants` from
    `runs` (each with "variant", "round", "jobs_per_s" and what `columns`
    read); jobs/s ratios against the `base` variant's run of the same round.
    `columns`: (header, the figure of one run or None, digits); a column
    whose figure is None for every run of a variant shows "-"."""
    lines = [
        "| variant | jobs/s | / " + base + " | " + " | ".join(h for h, _, _ in columns) + " |",
        "|---|---|---|" + "---|" * len(columns),
    ]
    base_by_round = {r["round"]: r for r in runs if r["variant"] == base}
    for v in variants:
        rs = [r for r in runs if r["variant"] == v]
        if not rs:
            lines.append(f"| {v} | not measured |" + " |" * (len(columns) + 1))
            continue
        ratios = [r["jobs_per_s"] / base_by_round[r["round"]]["jobs_per_s"]
                  for r in rs if r["round"] in base_by_round]
        cells = [fmt_range([r["jobs_per_s"] for r in rs]),
                 fmt_range(ratios, 2) if ratios else "-"]
        for _, figure, digits in columns:
            values = [figure(r) for r in rs]
            values = [x for x in values if x is not None]
            cells.append(fmt_range(values, digits) if values else "-")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    return lines


def per_run_lines(runs, rounds):
    """Markdown lines: jobs/s and Redis commands per job of every run, by
    round."""
    lines = ["Per run (jobs/s, Redis commands per job):", ""]
    for rnd in range(rounds):
        cells = [f"{r['variant']} {r['jobs_per_s']:,.0f} / {r['redis_commands_per_job']:.3f}"
                 for r in runs if r["round"] == rnd]
        lines.append(f"- round {rnd + 1}: " + "; ".join(cells))
    return lines
