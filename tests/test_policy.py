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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # delta_pp = inf once passed every system
        ("[verdict]\ndelta_pp = inf\n", r"verdict.delta_pp = inf is not a finite number"),
        ("[verdict]\ndelta_pp = -inf\n", r"verdict.delta_pp = -inf is not a finite number"),
        ("[verdict]\ndelta_pp = nan\n", r"verdict.delta_pp = nan is not a finite number"),
        ("[verdict]\ndelta_pp = 1e308\n", r"verdict.delta_pp = 1e\+308 is out of range"),
        ("[verdict]\ndelta_pp = 100.5\n", r"allowed: 0 <= delta_pp <= 100 \(percentage points\)"),
        ("[verdict]\ndelta_pp = -1\n", r"verdict.delta_pp = -1 is out of range"),
        ("[verdict]\nprobability = 0.5\n", r"allowed: 0.5 < probability <= 1"),
        ("[verdict]\nprobability = inf\n", r"verdict.probability = inf is not a finite"),
        ("[data]\nmax_abstention = 1.01\n", r"allowed: 0 <= max_abstention <= 1"),
        ("[data]\nmin_recovery = nan\n", r"data.min_recovery = nan is not a finite number"),
        ("[data]\nmin_parsable = -1\n", r"data.min_parsable = -1 is out of range"),
        (
            "[data]\nmin_parsable = 9223372036854775807\n",
            r"allowed: 0 <= min_parsable <= 1,000,000,000",
        ),
    ],
)
def test_non_finite_and_out_of_range_values_name_file_key_value_and_range(
    tmp_path: Path, text: str, message: str
) -> None:
    f = tmp_path / "policy.toml"
    f.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_policy(f)
    assert str(info.value).startswith(f"{f}: ")
    assert "allowed: " in str(info.value)


@pytest.mark.parametrize("value", [0.0, 100.0])
def test_range_ends_are_allowed(tmp_path: Path, value: float) -> None:
    f = tmp_path / "policy.toml"
    f.write_text(f"[verdict]\ndelta_pp = {value}\nprobability = 1.0\n[data]\nmin_parsable = 0\n")
    assert load_policy(f).delta_pp == value


def test_non_finite_values_rejected_in_code() -> None:
    with pytest.raises(ValueError, match=r"verdict.delta_pp = inf is not a finite number"):
        Policy(delta_pp=float("inf"))


KNOWN = (
    r"known sections: \[verdict\], \[data\], \[qa\], \[prompt_variance\], \[conversation\], "
    r"\[board\]$"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[verdicts]\ndelta_pp = 3\n",
            r"unknown section \[verdicts\]; " + KNOWN,
        ),
        ("delta_pp = 3\n", r"key 'delta_pp' is outside any section; put it under \[verdict\]$"),
        (
            "foo = 3\n",
            r"key 'foo' is outside any section; " + KNOWN,
        ),
    ],
)
def test_unknown_or_missing_section_lists_the_known_ones(
    tmp_path: Path, text: str, message: str
) -> None:
    f = tmp_path / "policy.toml"
    f.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_policy(f)
    assert str(info.value).startswith(f"{f}: ")


def test_binary_file_and_folder_are_named(tmp_path: Path) -> None:
    binary = tmp_path / "policy.bin"
    binary.write_bytes(bytes(range(200, 256)) * 4)
    with pytest.raises(ValueError, match=r"not a text file \(byte 0 is not UTF-8\)") as info:
        load_policy(binary)
    assert str(info.value).startswith(f"{binary}: ")
    nul = tmp_path / "nul.toml"
    nul.write_bytes(b"\x00\x01\x02")
    with pytest.raises(ValueError, match="not valid TOML") as info:
        load_policy(nul)
    assert str(info.value).startswith(f"{nul}: ")
    with pytest.raises(ValueError, match="is a folder, not a policy file") as info:
        load_policy(tmp_path)
    assert str(info.value).startswith(f"{tmp_path}: ")


def test_qa_delta_is_read_checked_and_left_out_of_the_dilemma_text(tmp_path: Path) -> None:
    f = tmp_path / "qa.toml"
    f.write_text("[qa]\ndelta_bias = 0.1\n")
    assert load_policy(f).delta_bias == 0.1
    f.write_text("[qa]\ndelta_bias = 0\n")
    with pytest.raises(ValueError, match=r"qa.delta_bias = 0 is out of range; allowed: 0 < "):
        load_policy(f)
    text = Policy(delta_bias=0.2).to_toml(("verdict", "data"))
    assert "[qa]" not in text and "delta_pp" in text
    assert "delta_bias = 0.2" in Policy(delta_bias=0.2).to_toml()


def test_conversation_delta_is_read_and_checked(tmp_path: Path) -> None:
    f = tmp_path / "conv.toml"
    f.write_text("[conversation]\ndelta_shift = 0.1\n")
    assert load_policy(f).delta_shift == 0.1 and Policy().delta_shift == 0.05
    f.write_text("[conversation]\ndelta_shift = 1.5\n")
    with pytest.raises(ValueError, match=r"conversation.delta_shift = 1.5 is out of range"):
        load_policy(f)
    assert "[conversation]\ndelta_shift = 0.1" in Policy(delta_shift=0.1).to_toml()
