"""``cuegap simulate --design conversation`` then ``cuegap ingest DIR`` (SQLite)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.schema import conv_counts, make_engine

runner = CliRunner()


def test_simulate_then_ingest_the_folder(tmp_path: Path) -> None:
    ws, db = tmp_path / "ws", tmp_path / "s.db"
    env = {"COLUMNS": "200"}
    sim = runner.invoke(
        app, ["simulate", str(ws), "--design", "conversation", "--systems", "1"], env=env
    )
    assert sim.exit_code == 0, sim.output
    assert "3,360 two-agent transcripts" in sim.output
    ing = runner.invoke(app, ["--db", f"sqlite:///{db}", "ingest", str(ws)], env=env)
    assert ing.exit_code == 0, ing.output
    assert "(mac-fairness-conversation): read 3,360" in ing.output
    assert "conversation status 'failed'" in ing.output
    want = pd.read_csv(ws / "counts.csv", keep_default_na=False)
    got = conv_counts(make_engine(f"sqlite:///{db}"))
    assert len(got) == len(want) == 5 * 168  # 5 categories x 168 configurations
    assert got["conversations"].sum() == want["conversations"].sum()
    pd.testing.assert_frame_equal(got, want[got.columns].astype(got.dtypes.to_dict()))
    again = runner.invoke(app, ["--db", f"sqlite:///{db}", "ingest", str(ws)], env=env)
    assert "stored 0" in again.output and "file already ingested" in again.output
    st = runner.invoke(app, ["--db", f"sqlite:///{db}", "status"], env=env)
    assert st.exit_code == 0, st.output
    stored = int(want["conversations"].sum())
    assert f"1 system, {stored:,} conversations from 1 file;" in st.output
    assert "0 responses" not in st.output  # a design the store does not hold is not listed
    assert "Conversation design" in st.output and "BBQ" in st.output
