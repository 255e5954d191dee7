import math

import pytest

from anchorlab.config import TrainConfig
from anchorlab.schedule import lr_at

SPE = 370  # paper: steps per epoch


def test_paper_schedule_values():
    c = TrainConfig(lr=1e-5, lr_multiplier=25, warmup_epochs=10, cosine_epochs=200, lr_min=1e-5)
    tw, tc = 10 * SPE, 200 * SPE
    assert lr_at(0, c, SPE) == pytest.approx(1e-5)
    assert lr_at(tw // 2, c, SPE) == pytest.approx(1e-5 * (1 + 24 * 0.5))
    assert lr_at(tw, c, SPE) == pytest.approx(2.5e-4)
    assert lr_at(tw + tc // 2, c, SPE) == pytest.approx(1e-5 + (2.5e-4 - 1e-5) / 2)
    t = tw + 1000
    assert lr_at(t, c, SPE) == pytest.approx(1e-5 + (2.4e-4) * (1 + math.cos(math.pi * 1000 / tc)) / 2)
    assert lr_at(tw + tc, c, SPE) == pytest.approx(1e-5)
    assert lr_at(tw + tc + 50, c, SPE) == pytest.approx(1e-5)
    # monotone up during warm-up, down during the cosine
    ups = [lr_at(s, c, SPE) for s in range(0, tw, 97)]
    downs = [lr_at(s, c, SPE) for s in range(tw, tw + tc, 997)]
    assert ups == sorted(ups) and downs == sorted(downs, reverse=True)


def test_constant_schedule():
    c = TrainConfig(lr=3e-4, schedule="constant")
    assert {lr_at(s, c, 10) for s in (0, 5, 10_000)} == {3e-4}
