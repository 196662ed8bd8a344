"""vortexgo.source: vortex's Source, presets and setup helpers, compared with
values printed by vortex 0.5.1 itself for the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from vortexgo.source import Source, compute_resampling, dispersion_phasor, find_rising_edges, source


def test_presets_match_vortex():
    assert repr(source.Axsun100k) == ("Source(triggers_per_second=100000, clock_rising_edges_per_second=1376, "
                                      "duty_cycle=0.5, imaging_depth_meters=0.0037)")
    assert repr(source.Axsun200k) == ("Source(triggers_per_second=200000, clock_rising_edges_per_second=1024, "
                                      "duty_cycle=0.61, imaging_depth_meters=0.0037)")
    assert repr(source.ThorlabsVCSEL400k) == ("Source(triggers_per_second=400000, clock_rising_edges_per_second=1024, "
                                              "duty_cycle=0.54, imaging_depth_meters=0)")
    p = source.Axsun100k
    p.duty_cycle = 0.9
    assert source.Axsun100k.duty_cycle == 0.5, "a preset is copied, never changed in place"
    assert Source() == Source(100_000, 1376, 0.5, 0.01) and not Source().has_clock


def test_dispersion_phasor_matches_vortex():
    vortex = [(0.999999902495 + 0.000441599986j), (0.999999968925 + 0.000249299997j),
              (0.999999993817 + 0.0001112j), (0.999999999611 + 2.79e-05j), (1 + 0j),
              (0.999999999605 + 2.81e-05j), (0.999999993638 + 0.0001128j), (0.999999967564 + 0.000254699997j)]
    p = dispersion_phasor(8, (2.8e-5, 1e-7))
    assert p.dtype == np.complex128
    np.testing.assert_allclose(p, vortex, atol=1e-12)


def test_find_rising_edges_matches_vortex():
    t = np.arange(200)
    sig = np.sin(2 * np.pi * t / 17.3 + 0.4) * 1000 + 5
    e = find_rising_edges(sig, 1000)
    assert len(e) == 11
    np.testing.assert_allclose(e[:4], [0.017270238296927688, 0.034567713471419764, 0.05186598046051516,
                                       0.06917002477055073], rtol=1e-12)
    np.testing.assert_allclose(find_rising_edges(sig, 1000, 3), e[:3])
    with pytest.raises(RuntimeError, match="found 11 rising edges, expected 50"):
        find_rising_edges(sig, 1000, 50)


def test_compute_resampling_matches_vortex():
    s = Source()
    s.clock_edges_seconds = [0.0, 1e-6, 2.5e-6, 4.5e-6]
    assert s.has_clock
    np.testing.assert_allclose(compute_resampling(s, 1_000_000, 6), [0.0, 0.6, 1.3, 2.2, 3.3, 4.5], atol=1e-12)
    # vortex 0.5.1 returns [2, 2, 2, 2, 2, 6.5] with a delay of 2 (an integer
    # conversion bug); the delay shifts every position.
    np.testing.assert_allclose(compute_resampling(s, 1_000_000, 6, 2), [2.0, 2.6, 3.3, 4.2, 5.3, 6.5], atol=1e-12)


@pytest.mark.parametrize("call,exc,words", [
    (lambda: compute_resampling(Source(), 1000, 4), ValueError, "no clock_edges_seconds"),
    (lambda: compute_resampling("s", 1000, 4), TypeError, "source="),
    (lambda: find_rising_edges([1, 2], 0), ValueError, "samples_per_second=0"),
    (lambda: dispersion_phasor(-1, (0, 0)), ValueError, "length=-1"),
    (lambda: dispersion_phasor(4, (1,)), TypeError, "coeff="),
    (lambda: setattr(Source(), "duty_cycle", 2), ValueError, "Source.duty_cycle"),
    (lambda: setattr(Source(), "clock_edges_seconds", [0, 0]), ValueError, "strictly increasing"),
])
def test_bad_values_name_the_argument(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
