"""A sign-off binds to what was reviewed: signed copies, never-overwritten report files,
safe output folders, reviewer keys and the witness file, through the real CLI."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import pg_database, restored, store_copy
from sqlalchemy import func, select, text
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.compliance import ComplianceError, sign_off, verify
from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.models import Policy
from cuegap.reanalysis import publish_report
from cuegap.reports import content_hash
from cuegap.schema import Report, make_engine, upgrade
from tests.test_report import assert_bidi_shown, need

runner = CliRunner()


def _lines(src: Path, every: int, offset: int) -> str:
    lines = src.read_text().splitlines()
    head = [lines[0]] if lines[0].startswith('{"format"') else []
    return "\n".join(head + lines[len(head) :][offset::every]) + "\n"


@dataclass
class Audited:
    """A store with part of a simulated audit, analysed, with an HTML+PDF report."""

    url: str
    work: Path  # the report folder's parent; tests write their outputs here
    data: Path
    published: dict


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def template(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Audited]:
    """Built once per backend; each test gets a copy (:func:`audited`)."""
    root = tmp_path_factory.mktemp(f"audited-{request.param}")
    data, work = root / "data", root / "work"
    data.mkdir()
    with contextlib.ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{root / 'store.db'}"
        else:
            url = stack.enter_context(pg_database())
        engine = make_engine(url)
        upgrade(engine)
        # 20 dilemmas, every other line: a sixth of the work of the full bank
        bank = synthetic_item_bank(seed=11, n_dilemmas=20)
        sim = simulate(data / "sim", systems=3, seed=11, item_bank=bank)
        (data / "first.jsonl").write_text(_lines(sim.responses_path, 2, 0))
        (data / "later.jsonl").write_text(_lines(sim.responses_path, 2, 1))
        ingest_path(engine, sim.itembank_path)
        ingest_path(engine, data / "first.jsonl")
        result = analyze(engine, AnalysisSettings(n_boot=20))
        published = publish_report(engine, result.id, work / "out")
        engine.dispose()
        yield Audited(url, work, data, published)


@pytest.fixture
def audited(template: Audited, tmp_path: Path) -> Iterator[tuple]:
    """(engine, work folder, published reports) of a fresh copy of the template store; the
    work folder is put back as it was afterwards."""
    with restored(template.work), store_copy(template.url, tmp_path) as url:
        engine = make_engine(url)
        engine.test_url = url  # type: ignore[attr-defined]
        yield engine, template.work, template.published
        engine.dispose()


@pytest.fixture
def db_url(audited: tuple) -> str:
    """The copy's URL, for tests that go through the CLI."""
    return audited[0].test_url


def _body(html: str) -> str:
    """The HTML without the sign-off records block."""
    return re.sub(
        r'data-cuegap="signoff-records">.*?</div><!--/signoff-records-->', "", html, flags=re.S
    )


def test_signed_copy_shows_what_was_reviewed_after_later_analysis_and_ingest(audited) -> None:
    engine, tmp, published = audited
    html_path, html_id = published["html"]
    reviewed = html_path.read_text("utf-8")
    # a right-to-left override and an isolate in the reviewer and comment: shown as escapes
    reviewer, comment = "Ada <b>\u202enimda", "ok \u2066dlrow\u2069 \u200f"
    sign_off(engine, html_id, reviewer=reviewer, decision="approve", comment=comment)
    # Later work on the same store: new data, a new analysis under another policy.
    ingest_path(engine, tmp.parent / "data" / "later.jsonl")
    analyze(engine, AnalysisSettings(n_boot=30, policy=Policy(delta_pp=5.0)))
    signed = publish_report(engine, None, tmp / "out", signed=html_id)  # type: ignore[arg-type]
    copy = signed["html"][0].read_text("utf-8")
    assert content_hash(copy) == content_hash(reviewed)
    assert _body(copy) == _body(reviewed)  # byte for byte, apart from the sign-off block
    assert "Ada &lt;b&gt;\\u202enimda" in copy and 'id="signoffs"' in copy
    assert_bidi_shown(copy, escapes=("\\u202enimda", "ok \\u2066dlrow\\u2069 \\u200f"))
    assert signed["pdf"][0].read_bytes().startswith(b"%PDF")
    pdf_text = subprocess.run(
        [need("pdftotext"), str(signed["pdf"][0]), "-"], capture_output=True, text=True
    ).stdout
    assert_bidi_shown(pdf_text, escapes=("\\u202enimda",))
    # The reviewed file is untouched and still registered; the copy supersedes it.
    assert html_path.read_text("utf-8") == reviewed
    with engine.connect() as conn:
        sup = conn.execute(select(Report.supersedes_id).where(Report.id == signed["html"][1]))
        assert sup.scalar() == html_id
    assert verify(engine).ok


def test_signed_copy_is_refused_when_what_was_reviewed_changed(audited) -> None:
    engine, tmp, published = audited
    _, html_id = published["html"]
    sign_off(engine, html_id, reviewer="Ada", decision="approve")
    with engine.begin() as conn:
        conn.execute(text("UPDATE analysis_table SET data = replace(data, 'flagged', 'passed')"))
        conn.execute(text("UPDATE analysis_table SET n_rows = n_rows + 1 WHERE name = 'verdicts'"))
    with pytest.raises(ComplianceError, match="cannot be reproduced as signed: analysis 1 changed"):
        publish_report(engine, None, tmp / "again", signed=html_id)  # type: ignore[arg-type]
    assert not (tmp / "again").exists() or not any((tmp / "again").iterdir())


def test_a_report_with_no_signoff_or_a_new_policy_is_refused(audited) -> None:
    engine, tmp, published = audited
    with pytest.raises(ComplianceError, match="has no sign-offs"):
        publish_report(engine, None, tmp / "x", signed=published["pdf"][1])  # type: ignore[arg-type]
    sign_off(engine, published["pdf"][1], reviewer="Bo", decision="reject")
    with pytest.raises(ValueError, match="--policy cannot be used with --signed"):
        publish_report(engine, None, tmp / "x", signed=2, policy=Policy(delta_pp=9.0))  # type: ignore[arg-type]


def test_rerender_never_overwrites_and_never_follows_a_link(audited) -> None:
    engine, tmp, published = audited
    out = tmp / "out"
    first = {fmt: path.read_bytes() for fmt, (path, _) in published.items()}
    victim = tmp / "victim.txt"
    victim.write_text("do not touch")
    (out / "cuegap-report-1-2.html").symlink_to(victim)  # planted for the next name
    again = publish_report(engine, 1, out)
    assert again["html"][0].name == "cuegap-report-1-3.html"
    assert again["pdf"][0].name == "cuegap-report-1-2.pdf"
    assert victim.read_text() == "do not touch"
    assert {fmt: path.read_bytes() for fmt, (path, _) in published.items()} == first
    assert not again["html"][0].is_symlink()
    assert verify(engine).ok


def test_failed_render_leaves_nothing_written_or_registered(audited, monkeypatch) -> None:
    engine, tmp, _ = audited
    import cuegap.reports._render as render

    def broken(_html: str) -> bytes:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(render, "render_pdf", broken)
    with engine.connect() as conn:
        before = conn.execute(select(func.count()).select_from(Report)).scalar()
    with pytest.raises(OSError):
        publish_report(engine, 1, tmp / "fresh")
    assert not (tmp / "fresh").exists() or not list((tmp / "fresh").iterdir())
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Report)).scalar() == before


def test_unwritable_out_folder_is_one_line_and_registers_nothing(audited) -> None:
    engine, tmp, _ = audited
    if os.geteuid() == 0:
        target = tmp / "a-file"  # root writes anywhere: use a file where a folder belongs
        target.write_text("x")
        out = target
    else:  # pragma: no cover - CI runs as root
        out = tmp / "ro"
        out.mkdir(mode=0o500)
    with pytest.raises(ValueError, match=r"is a file, not a folder|cannot write"):
        publish_report(engine, 1, out)


def test_keys_witness_and_verify_through_the_cli(audited, db_url: str, tmp_path: Path) -> None:
    engine, _tmp, published = audited
    key = tmp_path / "ada.key"
    res = runner.invoke(app, ["keygen", str(key), "--reviewer", "Ada"])
    assert res.exit_code == 0, res.output
    assert (key.stat().st_mode & 0o777) == 0o600 and Path(f"{key}.pub").is_file()
    again = runner.invoke(app, ["keygen", str(key), "--reviewer", "Ada"])
    assert again.exit_code == 2 and "never overwritten" in again.output
    db = ["--db", db_url]
    pdf_id = str(published["pdf"][1])
    res = runner.invoke(
        app,
        [*db, "signoff", pdf_id, "--reviewer", "Ada", "--decision", "approve", "--key", str(key)],
    )
    assert res.exit_code == 0 and "signed with key" in res.output, res.output
    witness = tmp_path / "witness.jsonl"
    res = runner.invoke(app, [*db, "witness", str(witness)])
    assert res.exit_code == 0 and json.loads(witness.read_text())["seq"] >= 2
    ok = runner.invoke(app, [*db, "verify", "--against", str(witness), "--trust", f"{key}.pub"])
    assert ok.exit_code == 0, ok.output
    assert "intact" in ok.output and "not ruled out" not in ok.output.replace("record(s)", "")
    plain = runner.invoke(app, [*db, "verify"])
    assert plain.exit_code == 0 and "not ruled out" in plain.output and "--against" in plain.output
    with engine.begin() as conn:  # remove the newest sign-off and its ledger entry
        conn.execute(text("DELETE FROM ledger WHERE seq = (SELECT MAX(seq) FROM ledger)"))
        conn.execute(text("DELETE FROM signoff"))
    bad = runner.invoke(app, [*db, "verify", "--against", str(witness)])
    assert bad.exit_code == 1 and "the ledger was truncated" in bad.output


def test_bad_key_and_witness_files_are_one_line(audited, db_url: str, tmp_path: Path) -> None:
    db = ["--db", db_url]
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00\xff not a key")
    res = runner.invoke(
        app, [*db, "signoff", "1", "--reviewer", "A", "--decision", "approve", "--key", str(junk)]
    )
    assert res.exit_code == 2 and "not a PEM private key" in res.output
    res = runner.invoke(app, [*db, "verify", "--against", str(junk)])
    assert res.exit_code == 2 and "witness" in res.output
    long_name = "R" * 250
    res = runner.invoke(
        app, [*db, "signoff", "1", "--reviewer", long_name, "--decision", "approve"]
    )
    assert res.exit_code == 2 and "at most 200" in res.output


def test_a_store_from_before_the_ledger_verifies_and_says_what_is_not_covered(audited) -> None:
    """Upgrading a store written before revision 0005 starts the ledger after its records:
    they are reported as not covered (not as tampered), and everything new is covered."""
    from alembic import command

    from cuegap.schema import upgrade
    from cuegap.schema._migrate import alembic_config

    engine, tmp, published = audited
    cfg = alembic_config(engine)
    with engine.connect() as conn:  # back to the previous cuegap's schema ...
        if conn.dialect.name == "sqlite":  # batch mode copies tables: keys off meanwhile
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0004")
        conn.commit()
    upgrade(engine)  # ... and upgraded by this one
    result = verify(engine)
    assert result.ok, result.problems
    assert any("written before this store's ledger began" in lim for lim in result.limits)
    sign_off(engine, published["html"][1], reviewer="Ada", decision="approve")
    with pytest.raises(ComplianceError, match="registered before cuegap kept"):
        publish_report(engine, None, tmp / "signed", signed=published["html"][1])  # type: ignore[arg-type]
    with engine.begin() as conn:
        conn.execute(text("UPDATE signoff SET decision = 'reject'"))
    assert any("sign-off 1" in p for p in verify(engine).problems)


def test_signed_copy_is_unchanged_by_a_later_bayesian_fit_of_the_same_data(audited) -> None:
    """The issue's reproduction: after a sign-off, a Bayesian analysis of the same data
    changes what a fresh render says (verdicts from the posterior); the signed copy still
    shows exactly what the board reviewed."""
    from test_report import _store_bayes

    from cuegap.designs.dilemma._report import build_report
    from cuegap.reports import render_html

    engine, tmp, published = audited
    html_path, html_id = published["html"]
    reviewed = html_path.read_text("utf-8")
    sign_off(engine, html_id, reviewer="Ada", decision="approve")
    before = build_report(engine, analysis_id=1)
    systems = sorted(before.tables["verdicts"]["system"])
    same = {**before.settings.to_dict(), "bayes": {"draws": 1000}}
    _store_bayes(engine, before.data_fingerprint, systems, same)
    fresh = build_report(engine, analysis_id=1)
    assert fresh.bayes is not None  # a fresh render would now show the posterior ...
    assert content_hash(render_html(fresh).html) != content_hash(reviewed)
    signed = publish_report(engine, None, tmp / "signed", signed=html_id)  # type: ignore[arg-type]
    copy = signed["html"][0].read_text("utf-8")
    assert content_hash(copy) == content_hash(reviewed)  # ... the signed copy does not
    assert _body(copy) == _body(reviewed)
