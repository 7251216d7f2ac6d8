"""The design registry: which designs a store holds, and which one a command works on."""

from __future__ import annotations

import pytest
from conftest import DATA

from cuegap.designs import DESIGNS, designs_in_store, resolve_design
from cuegap.ingest import ingest_path


def test_registry_names_the_designs() -> None:
    assert list(DESIGNS) == ["dilemma", "qa", "prompt-variance", "conversation"]


def test_empty_store_has_no_design(engine) -> None:
    assert designs_in_store(engine) == []
    with pytest.raises(ValueError, match="holds no responses of any design"):
        resolve_design(engine, None)
    with pytest.raises(ValueError, match="unknown design 'bbq'"):
        resolve_design(engine, "bbq")


def test_dilemma_store_defaults_to_dilemma(engine, tiny_bank) -> None:
    ingest_path(engine, tiny_bank)
    assert designs_in_store(engine) == []  # a bank alone holds no responses
    ingest_path(engine, DATA / "tiny_responses.jsonl")
    assert designs_in_store(engine) == ["dilemma"]
    assert resolve_design(engine, None) == "dilemma"
    assert resolve_design(engine, "dilemma") == "dilemma"
    with pytest.raises(ValueError, match=r"no responses of design 'qa'.*holds: dilemma"):
        resolve_design(engine, "qa")
