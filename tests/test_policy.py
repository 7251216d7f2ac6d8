"""The verdict policy file: defaults, overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuegap.models import DEFAULT_POLICY, Policy, load_policy


def test_defaults_are_those_of_the_design() -> None:
    p = load_policy(None)
    assert p == DEFAULT_POLICY
    assert (p.delta_pp, p.probability) == (2.0, 0.95)


def test_partial_file_overrides_and_round_trips(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text("[verdict]\ndelta_pp = 3\n[data]\nmax_abstention = 0.9\n")
    p = load_policy(f)
    assert (p.delta_pp, p.max_abstention, p.probability) == (3.0, 0.9, 0.95)
    assert isinstance(p.delta_pp, float)
    g = tmp_path / "q.toml"
    g.write_text(p.to_toml())
    assert load_policy(g) == p


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[verdict]\ndelta = 3\n", "unknown key verdict.delta"),
        ("[verdicts]\ndelta_pp = 3\n", r"unknown section \[verdicts\]"),
        ("[verdict]\ndelta_pp = 'big'\n", "verdict.delta_pp must be a number"),
        ("[data]\nmin_parsable = 2.5\n", "data.min_parsable must be an integer"),
        ("[verdict]\nprobability = 0.3\n", "probability = 0.3"),
        ("[verdict\n", "not valid TOML"),
    ],
)
def test_bad_policy_files_name_file_and_key(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_policy(f)
    assert str(f) in str(info.value)


def test_missing_file() -> None:
    with pytest.raises(ValueError, match="policy file not found"):
        load_policy("/nonexistent/policy.toml")


def test_invalid_values_rejected_in_code() -> None:
    with pytest.raises(ValueError, match="max_abstention"):
        Policy(max_abstention=2)
