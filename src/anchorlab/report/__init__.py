"""The HTML report of runs and sweeps (``anchorlab report``): :mod:`.page` assembles it, :mod:`.anchor` and
:mod:`.lm` write the sections of each run kind, :mod:`.html` holds the building blocks they share."""

from anchorlab.report.page import write_report

__all__ = ["write_report"]
