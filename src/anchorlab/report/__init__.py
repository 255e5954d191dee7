"""The HTML report of runs and sweeps (``anchorlab report``): :mod:`.page` assembles it, :mod:`.anchor`, :mod:`.lm`
and :mod:`.seq2seq` write the sections of each run kind (the last two on :mod:`.steps`), :mod:`.html` holds the
building blocks they share."""

from anchorlab.report.page import write_report

__all__ = ["write_report"]
