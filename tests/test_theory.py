import numpy as np
import pytest

from anchorlab.config import MemRsnTaskConfig
from anchorlab.tasks import make_task_data
from anchorlab.theory import (
    centered_cosine_matrix,
    compare_cosine,
    constructed_embeddings,
    cosine_matrix,
    label_distribution_empirical,
    label_distribution_exact,
)

PAPER = MemRsnTaskConfig()
RSN = list(range(11, 21))
MEM = list(range(1, 11))


@pytest.fixture(scope="module")
def paper_data():
    return make_task_data(PAPER, 1)


def test_tiny_case_by_hand():
    # Z = {5, 6}, A_mem = {1}, A_rsn = {2, 3}, q = 2: tuples (1,1), (2,2), (2,3), (3,2), (3,3)
    cfg = MemRsnTaskConfig(key_min=5, key_max=6, mem_anchors=(1,), rsn_anchors=(2, 3), masked=(), seq_len=3,
                           data_size=5, vocab_size=13)
    cfg.validate()
    token = label_distribution_exact(cfg, "token")
    # anchor 2 with multiplicity: (2,2) twice -> Z+4 = {9,10}; (2,3), (3,2) -> Z+5 = {10,11}
    assert np.allclose(token[2], np.eye(13)[9] / 4 + np.eye(13)[10] / 2 + np.eye(13)[11] / 4)
    assert np.allclose(token[3], np.eye(13)[10] / 4 + np.eye(13)[11] / 2 + np.eye(13)[12] / 4)
    once = label_distribution_exact(cfg, "once")  # (2,2) counted once: weights 1, 1, 1
    assert np.allclose(once[2], np.eye(13)[9] / 6 + np.eye(13)[10] / 2 + np.eye(13)[11] / 3)
    assert np.allclose(token[1], (np.eye(13)[5] + np.eye(13)[6]) / 2)  # memory: U(Z)


def test_eq8_form_for_reasoning_anchors():
    P = label_distribution_exact(PAPER)
    z = np.arange(21, 121)
    for s in (11, 15, 20):  # P(Z + A = i - s) with A ~ U(A_rsn)
        expected = np.zeros(200)
        for a in RSN:
            expected[z + a + s] += 1 / 1000
        assert np.allclose(P[s], expected)
    for s in MEM:
        assert np.allclose(P[s][21:121], 0.01) and P[s].sum() == pytest.approx(1)


def test_spec_check_values_centered_cosine():
    P = label_distribution_exact(PAPER)
    C = centered_cosine_matrix({s: P[s] for s in RSN}, 200)
    for ds, want in ((1, 0.998), (4, 0.970), (6, 0.938), (9, 0.878)):
        assert C[0, ds] == pytest.approx(want, abs=0.002), ds
    assert C[3, 7] == pytest.approx(0.970, abs=0.002)  # depends on |Δs| only
    assert np.allclose(np.diff(C[0]), np.minimum(np.diff(C[0]), 0))  # decreasing in |Δs|
    Cm = centered_cosine_matrix({s: P[s] for s in MEM}, 200)
    assert np.allclose(Cm, 1.0)


def test_spec_check_values_eq14():
    W = constructed_embeddings(RSN, 200)
    C = cosine_matrix(W)
    for ds, want in ((1, 0.959), (3, 0.683), (5, 0.344), (7, 0.118), (9, 0.022)):
        assert C[0, ds] == pytest.approx(want, abs=0.001), ds
    assert W[0, 11] == pytest.approx(1 - 1 / 200) and W[0, 0] == pytest.approx(np.exp(-121 / 12) - 1 / 200)
    keys = constructed_embeddings([21, 60], 200, subtract_mean=False)
    assert keys[1, 60] == 1.0 and keys[1, 0] == pytest.approx(np.exp(-3600 / 12))
    noisy_a = constructed_embeddings(RSN, 200, noise_std=0.01, seed=3)
    assert np.array_equal(noisy_a, constructed_embeddings(RSN, 200, noise_std=0.01, seed=3))
    assert np.std(noisy_a - W) == pytest.approx(0.01, rel=0.05)


def test_empirical_matches_exact(paper_data):
    anchors = MEM + RSN
    for count in ("token", "once"):
        exact = label_distribution_exact(PAPER, count)
        emp = label_distribution_empirical(paper_data, anchors, count)
        for s in RSN:
            assert np.abs(emp[s] - exact[s]).max() < 0.004, (count, s)
        for s in MEM:  # the lookup table is one U(Z) draw: only close in expectation
            assert np.abs(emp[s] - exact[s]).max() < 0.01 and emp[s][21:121].sum() == pytest.approx(1)
    # training set only: the masked tuples (11,13), (13,11) drop out -> the other anchor is U(A_rsn minus 13)
    tr_exact = label_distribution_exact(PAPER, train_only=True)
    expected = np.zeros(200)
    for a in set(RSN) - {13}:
        expected[np.arange(21, 121) + 11 + a] += 1 / 900
    assert np.allclose(tr_exact[11], expected)
    tr_emp = label_distribution_empirical(paper_data, RSN, train_only=True)
    assert np.abs(tr_emp[11] - tr_exact[11]).max() < 0.004
    C = centered_cosine_matrix({s: label_distribution_empirical(paper_data, RSN)[s] for s in RSN}, 200)
    assert C[0, 9] == pytest.approx(0.878, abs=0.01)


def test_empirical_follows_the_counting_convention():
    # few anchors, so repeated-anchor tuples like (2, 2) weigh a lot and the conventions differ clearly
    cfg = MemRsnTaskConfig(key_min=5, key_max=6, mem_anchors=(1,), rsn_anchors=(2, 3), masked=(), seq_len=4,
                           data_size=50_000, vocab_size=13)
    d = make_task_data(cfg, 2)
    for count in ("token", "once"):
        exact, emp = label_distribution_exact(cfg, count), label_distribution_empirical(d, [1, 2, 3], count)
        for s in (2, 3):
            assert np.abs(emp[s] - exact[s]).max() < 0.01, (count, s)
    assert np.abs(label_distribution_exact(cfg, "once")[2] - label_distribution_exact(cfg, "token")[2]).max() > 0.05
    # masking (2,3), (3,2): anchor 2's training rows are all (2, 2) -> labels Z + 4 = {9, 10}
    masked = MemRsnTaskConfig(**{**cfg.__dict__, "masked": ((2, 3), (3, 2))})
    d = make_task_data(masked, 2)
    want = (np.eye(13)[9] + np.eye(13)[10]) / 2
    assert np.allclose(label_distribution_exact(masked, train_only=True)[2], want)
    assert np.abs(label_distribution_empirical(d, [2], train_only=True)[2] - want).max() < 0.01
    assert np.abs(label_distribution_empirical(d, [2])[2] - want).max() > 0.1


def test_compare_cosine():
    theory = cosine_matrix(constructed_embeddings(RSN, 200))
    same = compare_cosine(theory, theory)
    assert same["pearson_r"] == pytest.approx(1) and np.allclose(same["row"], 1) and same["max_abs_diff"] == 0
    # an affine map of the off-diagonal entries keeps r = 1; reversing the band makes it negative
    scaled = 0.5 * theory + 0.2
    np.fill_diagonal(scaled, 1.0)
    assert compare_cosine(theory, scaled)["pearson_r"] == pytest.approx(1)
    flipped = 1 - theory
    np.fill_diagonal(flipped, 1.0)
    assert compare_cosine(theory, flipped)["pearson_r"] == pytest.approx(-1)
    noisy = theory + np.random.default_rng(0).normal(0, 0.2, theory.shape)
    r = compare_cosine(theory, noisy)
    assert 0 < r["pearson_r"] < 0.99 and r["row"].shape == (10,)
    with pytest.raises(ValueError):
        compare_cosine(theory, theory[:5, :5])


def test_mixed_tuples_enter_the_distributions():
    cfg = MemRsnTaskConfig(key_min=5, key_max=6, mem_anchors=(1,), rsn_anchors=(2, 3), masked=(), seq_len=3,
                           data_size=90_000, vocab_size=13, include_mixed=True)
    exact = label_distribution_exact(cfg)
    # anchor 2 by token count: (2,2) x2 -> Z+4, (2,3), (3,2) -> Z+5, (1,2), (2,1) -> looked up, U(Z)
    want = (2 * (np.eye(13)[9] + np.eye(13)[10]) / 2 + 2 * (np.eye(13)[10] + np.eye(13)[11]) / 2
            + 2 * (np.eye(13)[5] + np.eye(13)[6]) / 2) / 6
    assert np.allclose(exact[2], want)
    emp = label_distribution_empirical(make_task_data(cfg, 4), [2], count="token")
    # the 4 looked-up labels of this seed only match U(Z) in expectation: compare their total mass
    assert np.abs(emp[2][9:] - want[9:]).max() < 0.01 and emp[2][5:7].sum() == pytest.approx(1 / 3, abs=0.01)


def test_exact_label_distribution_of_the_fig8_variants():
    """Memory anchors' P^s follows the label rule: a window around the key, or the group's range."""
    from anchorlab.config import MemRsnTaskConfig
    from anchorlab.tasks import make_task_data
    from anchorlab.theory import label_distribution_empirical, label_distribution_exact

    cfg = MemRsnTaskConfig(rsn_anchors=(), masked=(), mem_label_ranges=((30, 49), (30, 109)), data_size=100_000)
    P = label_distribution_exact(cfg)
    # anchor 1 only starts group-0 pairs as a first anchor, but also sits second in pairs of both groups
    assert np.isclose(P[1].sum(), 1.0) and P[1][:30].sum() == 0 and P[1][110:].sum() == 0
    # rows in group 0 put 1/20 on each label of 30..49, group 1 rows 1/80 on 30..109: more mass below 50
    assert P[1][30:50].min() > P[1][50:110].max() > 0
    # anchor 6 as a first anchor is group 1 (30..109); everything it touches lies in 30..109
    emp = label_distribution_empirical(make_task_data(cfg, 1), [1, 6])
    for s in (1, 6):
        assert np.abs(emp[s] - P[s]).max() < 0.03 and np.abs(emp[s] - P[s]).sum() < 0.25  # one lookup draw
    kw = MemRsnTaskConfig(mem_label="key_window")
    Pk = label_distribution_exact(kw)
    # pair (1, 1): window z-2..z+2 around U(21..120); anchor 1's support is 21-20 .. 120+20 at most
    assert Pk[1][:1].sum() == 0 and Pk[1][1:21].sum() > 0 and np.isclose(Pk[1].sum(), 1.0)
