"""The responses' ledger digest computed while writing equals the one read back from the store.

An ingest pass hashes the responses it stores as it writes them (``cuegap.ingest._digest``)
instead of reading them back to seal the pass. ``cuegap verify`` recomputes the digest by
reading the rows back (``ledger.object_digest``), so the two must agree byte for byte: on
every backend, across batch and hash-chunk boundaries, for every kind of line, and when a
batch is only partly stored (where SQLite falls back to reading back).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from sqlalchemy import select

from cuegap.designs.dilemma.simulate import simulate
from cuegap.ingest import _digest, ingest_path
from cuegap.schema import IngestBatch, ledger

ROOT = Path(__file__).parent.parent


def _every_reason_file(path: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "ingest_identical", ROOT / "benchmarks" / "ingest_identical.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.every_reason_file(path)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """One simulated system (about 22k responses: three hash chunks) and a file whose first
    half repeats it and whose second half is new (other system names)."""
    out = tmp_path_factory.mktemp("sim")
    res = simulate(out, systems=1, seed=3)
    lines = res.responses_path.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    overlap = out / "overlap.jsonl"
    overlap.write_bytes(
        b"".join(lines[:half])
        + b"".join(x.replace(b'"system":"sim-', b'"system":"new-') for x in lines[half:])
    )
    return res.itembank_path, res.responses_path, overlap


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """What each pass's running digest returned (None: it gave up and the rows are read)."""
    seen: list[str | None] = []
    real = _digest.ResponseDigest.hexdigest

    def spy(self: _digest.ResponseDigest) -> str | None:
        out = real(self)
        seen.append(out)
        return out

    monkeypatch.setattr(_digest.ResponseDigest, "hexdigest", spy)
    return seen


def _sealed_equals_read_back(engine) -> int:
    with engine.connect() as conn:
        batches = conn.execute(select(IngestBatch.id)).scalars().all()
        for b in batches:
            recorded = ledger.latest_digest(conn, "batch", b)
            assert recorded is not None, b
            assert recorded == ledger.object_digest(conn, "batch", b), f"batch {b}"
    return len(batches)


def test_written_digest_equals_read_back(engine, sim, written) -> None:
    bank, responses, overlap = sim
    ingest_path(engine, bank)
    # Batches of 7,000 rows: the 10,000-row hash chunks straddle transactions.
    s = ingest_path(engine, responses, batch_size=7_000)
    assert s.stored > 20_000 and s.quarantined == 0
    again = ingest_path(engine, responses, batch_size=7_000)  # stores nothing
    assert again.stored == 0 and again.duplicate == s.stored
    part = ingest_path(engine, overlap, batch_size=7_000)  # half stored, half duplicates
    assert part.stored > 10_000 and part.duplicate > 10_000
    assert _sealed_equals_read_back(engine) == 3
    assert written[0] is not None  # the fresh file: hashed while written, not read back
    assert written[1] is not None  # nothing stored: the empty digest
    if engine.dialect.name == "postgresql":  # the insert returns the ids of what it stored
        assert written[2] is not None
    else:  # a partly stored batch: ids unknown, read back instead
        assert written[2] is None


def test_every_reason_file_digest(engine, tiny_bank, tmp_path, written) -> None:
    """Quarantined lines, conflicts, repeats, NULLs and non-ASCII answers, in tiny batches."""
    ingest_path(engine, tiny_bank)
    every = _every_reason_file(tmp_path / "every.jsonl")
    first = ingest_path(engine, every, batch_size=7)
    assert first.stored and first.quarantined
    ingest_path(engine, every)
    assert _sealed_equals_read_back(engine) == 2
    assert written[0] is not None
