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


def test_cooldown_falls_linearly_to_lr_min_over_the_last_epochs():
    c = TrainConfig(lr=1e-5, lr_multiplier=20, warmup_epochs=10, cosine_epochs=200, lr_min=1e-5, epochs=33,
                    cooldown_epochs=6)
    plain = TrainConfig(lr=1e-5, lr_multiplier=20, warmup_epochs=10, cosine_epochs=200, lr_min=1e-5, epochs=33)
    t_d, t_end = 27 * SPE, 33 * SPE
    assert all(lr_at(t, c, SPE) == lr_at(t, plain, SPE) for t in range(t_d + 1))  # unchanged up to its start
    start = 1e-5 + (2e-4 - 1e-5) * (1 + math.cos(math.pi * 17 / 200)) / 2  # epoch 27 of the paper cosine: 0.982 peak
    assert lr_at(t_d, c, SPE) == pytest.approx(start)
    assert lr_at(t_d + 3 * SPE, c, SPE) == pytest.approx(1e-5 + (start - 1e-5) / 2)  # half way down
    assert lr_at(t_end - 1, c, SPE) == pytest.approx(1e-5 + (start - 1e-5) / (6 * SPE))
    downs = [lr_at(t, c, SPE) for t in range(t_d, t_end)]
    assert downs == sorted(downs, reverse=True) and len(set(downs)) == len(downs)
    const = TrainConfig(lr=3e-4, lr_min=0.5e-4, schedule="constant", epochs=10, cooldown_epochs=2)
    assert lr_at(8 * 10 - 1, const, 10) == 3e-4 and lr_at(90, const, 10) == pytest.approx(0.5e-4 + 2.5e-4 / 2)


def test_cooldown_is_checked_against_the_run_length_and_leaves_old_run_ids_alone():
    from anchorlab.config import ConfigError, load_config

    cfg = load_config("configs/p1/cbook.toml", ["train.epochs=27", "train.eval_every=3", "train.checkpoint_every=3",
                                                "train.precision=fp32", "init.gamma=1.0", "seed=1"])
    assert cfg.run_id() == "2bc8b04d9809"  # committed under docs/p1_paper_gamma/cpu_fp32/ before the field existed
    assert cfg.replace(**{"train.cooldown_epochs": 6}).run_id() != cfg.run_id()
    with pytest.raises(ConfigError, match=r"train\.cooldown_epochs: allowed values are a float in \[0, "):
        load_config("configs/p1/cbook.toml", ["train.epochs=5", "train.cooldown_epochs=6"])
