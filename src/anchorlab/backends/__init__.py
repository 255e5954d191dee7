"""Where the runs of a sweep train: :mod:`.local` (this process, one run or K stacked runs at a time),
:mod:`.pool` (a pool of 1-thread worker processes) or :mod:`.ray` (one Ray task per run). What they share
(results, the progress bar, thread pinning, the per-run train-and-report call) is in :mod:`.common`;
:func:`anchorlab.execute.run_all` picks one."""

BACKENDS = ("local", "process", "ray")
