"""The tamper suite: 45 kinds of edit made directly in a signed store, each on a fresh copy.

A signed store (a simulated audit of three systems, subsampled; an analysis; a stored
posterior; an HTML and a PDF report; two sign-offs, one with a reviewer's key) is built once
per backend. Each case copies it (a file copy on SQLite, ``CREATE DATABASE ... TEMPLATE`` on
PostgreSQL), makes one edit with plain SQL as someone with write access to the store would,
and asserts that ``verify`` names it. The control case makes no edit and must pass, so the
suite can fail.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PG_URL, REQUIRE_PG, _pg_admin_url, restored, store_copy
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine, make_url

from cuegap.audit import save_analysis
from cuegap.compliance import generate_key, sign_off, verify, write_witness
from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma.simulate import simulate, synthetic_item_bank
from cuegap.ingest import ingest_path
from cuegap.reanalysis import publish_report
from cuegap.schema import ledger, make_engine, upgrade

BLOB = b"CDF\x01 stand-in posterior bytes for the tamper suite"


@dataclass
class Signed:
    """A signed store and how to copy it."""

    backend: str
    url: str
    root: Path
    pub: Path
    reports: dict[str, Path]


def _subsample(src: Path, dst: Path, every: int = 12) -> None:
    lines = src.read_text().splitlines()
    head = [lines[0]] if lines[0].startswith('{"format"') else []
    body = lines[len(head) :]
    bad = [
        '{"system": "sim-system-01", "item_id": "no-such-item", "probe": "main", "response": "x"}'
    ]
    dst.write_text("\n".join(head + body[::every] + bad) + "\n")


def _build(engine: Engine, root: Path) -> tuple[Path, dict[str, Path]]:
    # A 24-dilemma bank, every third line: as many responses as every twelfth line of the
    # full bank, at a quarter of the simulation's cost (the edits need a store, not power).
    bank = synthetic_item_bank(seed=7, n_dilemmas=24)
    sim = simulate(root / "sim", systems=3, seed=7, item_bank=bank)
    _subsample(sim.responses_path, root / "responses.jsonl", every=3)
    upgrade(engine)
    ingest_path(engine, sim.itembank_path)
    ingest_path(engine, root / "responses.jsonl")
    result = analyze(engine, AnalysisSettings(n_boot=20))
    save_analysis(
        engine,
        kind="bayesian",
        status="ok",
        data_fingerprint=result.data_fingerprint,
        system_fingerprints={},
        settings={"note": "stand-in fit"},
        tables={},
        artifacts={"idata": (BLOB, "application/x-netcdf")},
    )
    published = publish_report(engine, result.id, root / "reports")
    key, pub, _ = generate_key(root / "ada.key", reviewer="Ada")
    sign_off(engine, published["html"][1], reviewer="Ada", decision="approve", key=key)
    sign_off(engine, published["pdf"][1], reviewer="Bo", decision="reject", comment="no")
    write_witness(engine, root / "witness.jsonl")
    return pub, {fmt: path for fmt, (path, _) in published.items()}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def signed(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Signed]:
    root = tmp_path_factory.mktemp(f"signed-{request.param}")
    if request.param == "sqlite":
        url = f"sqlite:///{root / 'store.db'}"
        engine = make_engine(url)
        pub, reports = _build(engine, root)
        engine.dispose()
        yield Signed("sqlite", url, root, pub, reports)
        return
    if not PG_URL:
        if REQUIRE_PG:
            pytest.fail("CUEGAP_REQUIRE_PG=1 but CUEGAP_TEST_PG_URL is not set")
        pytest.skip("no PostgreSQL server: set CUEGAP_TEST_PG_URL")
    name = f"cuegap_tamper_{uuid.uuid4().hex[:10]}"
    admin = create_engine(_pg_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(_pg_admin_url()).set(database=name).render_as_string(hide_password=False)
    engine = make_engine(url)
    pub, reports = _build(engine, root)
    engine.dispose()
    try:
        yield Signed("postgresql", url, root, pub, reports)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def copy(signed: Signed, tmp_path: Path) -> Iterator[Engine]:
    """A fresh copy of the signed store (its report files are shared and restored)."""
    with restored(signed.root / "reports"), store_copy(signed.url, tmp_path) as url:
        engine = make_engine(url)
        yield engine
        engine.dispose()


# --------------------------------------------------------------------------- edits

Edit = Callable[[Connection, Signed], None]


def sql(*statements: str) -> Edit:
    def run(conn: Connection, _s: Signed) -> None:
        for st in statements:
            conn.execute(text(st))

    return run


def file_edit(fmt: str, how: str) -> Edit:
    def run(_conn: Connection, s: Signed) -> None:
        path = s.reports[fmt]
        if how == "delete":
            path.unlink()
        else:
            data = bytearray(path.read_bytes())
            data[len(data) // 2] ^= 1
            path.write_bytes(bytes(data))

    return run


def rehash_report_and_file(conn: Connection, s: Signed) -> None:
    """Change the HTML file and update its registered hash to match."""
    path = s.reports["html"]
    path.write_text(path.read_text().replace("inconclusive", "passed"))
    from cuegap.compliance import file_sha256

    conn.execute(
        text("UPDATE report SET sha256 = :h WHERE format = 'html'"), {"h": file_sha256(path)}
    )


def forge_signoff(conn: Connection, _s: Signed, *, with_ledger: bool) -> None:
    """Append a forged 'approve' with a correct record hash (and ledger entry)."""
    from cuegap.compliance import record_hash

    last = conn.execute(text("SELECT * FROM signoff ORDER BY seq DESC LIMIT 1")).mappings().one()
    values = {
        "seq": last["seq"] + 1,
        "report_id": last["report_id"],
        "report_sha256": last["report_sha256"],
        "reviewer": "Mallory",
        "decision": "approve",
        "comment": None,
        "signed_at": last["signed_at"],
        "prev_hash": last["record_hash"],
        "record_version": 2,
        "analysis_digest": last["analysis_digest"],
        "ledger_head": last["ledger_head"],
        "key_id": None,
    }
    values["record_hash"] = record_hash(**values)
    cols = ", ".join(values)
    conn.execute(text(f"INSERT INTO signoff ({cols}) VALUES (:{', :'.join(values)})"), values)
    if with_ledger:
        ledger.record(conn, "signoff", values["seq"])


def rewrite_chain(conn: Connection, _s: Signed) -> None:
    """Edit a verdict table, then recompute every ledger entry from there on."""
    conn.execute(text("UPDATE analysis_table SET data = replace(data, 'inconclusive', 'passed')"))
    rebuild_ledger(conn)


def rebuild_ledger(conn: Connection) -> None:
    rows = conn.execute(text("SELECT * FROM ledger ORDER BY seq")).mappings().all()
    conn.execute(text("DELETE FROM ledger"))
    prev = ledger.GENESIS
    for r in rows:
        values = dict(r)
        if values["kind"] != "genesis":
            parts = ledger.PARTS[values["kind"]](conn, values["ref_id"])
            values["digest"] = ledger.combine(parts)
            values["detail"] = json.dumps(parts, sort_keys=True, separators=(",", ":"))
        values["prev_hash"] = prev
        fields = {k: values[k] for k in ledger.Entry.__slots__ if k != "entry_hash"}
        values["entry_hash"] = prev = ledger.entry_hash(**fields)
        cols = ", ".join(values)
        conn.execute(text(f"INSERT INTO ledger ({cols}) VALUES (:{', :'.join(values)})"), values)


def truncate_end(conn: Connection, _s: Signed) -> None:
    """Delete the newest sign-off (the 'reject') and its ledger entry."""
    conn.execute(text("DELETE FROM ledger WHERE seq = (SELECT MAX(seq) FROM ledger)"))
    conn.execute(text("DELETE FROM signoff WHERE seq = 2"))


_RESP = "SELECT MIN(id) FROM response"
_INSERT_RESPONSE = (
    "INSERT INTO response (response_key, content_hash, run_id, batch_id, system_id, item_id, "
    "condition, difficulty, probe, individual, consequences, prompt_variant, repeat, "
    "raw_text, parse_status, abstained, source_line) SELECT 'f' || substr(response_key, 2), "
    "content_hash, "
    "run_id, batch_id, system_id, item_id, condition, difficulty, probe, individual, "
    "consequences, 'v9', repeat, raw_text, parse_status, abstained, source_line FROM response "
    f"WHERE id = ({_RESP})"
)

CASES: list[tuple[str, Edit, str, dict]] = [
    # analyses: verdict tables, settings, artifacts
    (
        "verdict row edited",
        sql(
            "UPDATE analysis_table SET data = replace(data, 'inconclusive', 'passed') WHERE name = 'verdicts'"
        ),
        "analysis 1: its result tables changed",
        {},
    ),
    (
        "result table deleted",
        sql("DELETE FROM analysis_table WHERE name = 'verdicts'"),
        "analysis 1: its result tables changed",
        {},
    ),
    (
        "result table inserted",
        sql(
            "INSERT INTO analysis_table (analysis_id, name, n_rows, data) VALUES (1, 'extra', 0, '{}')"
        ),
        "analysis 1: its result tables changed",
        {},
    ),
    (
        "policy edited",
        sql('UPDATE analysis SET settings = \'{"policy": {"delta_pp": 50}}\' WHERE id = 1'),
        "analysis 1: its record changed",
        {},
    ),
    (
        "data fingerprint edited",
        sql("UPDATE analysis SET data_fingerprint = 'x' WHERE id = 1"),
        "analysis 1: its record changed",
        {},
    ),
    (
        "package versions edited",
        sql("UPDATE analysis SET versions = '{}' WHERE id = 1"),
        "analysis 1: its record changed",
        {},
    ),
    (
        "analysis status edited",
        sql("UPDATE analysis SET status = 'ok', message = 'fine' WHERE id = 2"),
        "analysis 2: its record changed",
        {},
    ),
    (
        "analysis digest edited",
        sql("UPDATE analysis SET content_digest = 'x' WHERE id = 1"),
        "analysis 1 no longer has the content",
        {},
    ),
    (
        "analysis inserted",
        sql(
            "INSERT INTO analysis (kind, status, data_fingerprint, created_at) VALUES ('frequentist', 'ok', 'x', '2026-01-01')"
        ),
        "analysis 3 has no ledger entry",
        {},
    ),
    (
        "artifact replaced with its hash",
        sql("UPDATE analysis_artifact SET content = content || content, sha256 = 'x'"),
        "analysis 2: its stored artifacts (posterior) changed",
        {},
    ),
    (
        "artifact truncated",
        sql("UPDATE analysis_artifact SET content = ''"),
        "analysis 2: its stored artifacts (posterior) changed",
        {},
    ),
    (
        "artifact deleted",
        sql("DELETE FROM analysis_artifact"),
        "analysis 2: its stored artifacts (posterior) changed",
        {},
    ),
    # responses and ingest records
    (
        "response text edited",
        sql(f"UPDATE response SET raw_text = raw_text || ' (edited)' WHERE id = ({_RESP})"),
        "ingest batch 1: its stored responses changed",
        {},
    ),
    (
        "parsed answer edited",
        sql("UPDATE response SET parsed_answer = 'option1' WHERE parsed_answer = 'option2'"),
        "ingest batch 1: its stored responses changed",
        {},
    ),
    (
        "response deleted",
        sql(f"DELETE FROM response WHERE id = ({_RESP})"),
        "ingest batch 1: its stored responses changed",
        {},
    ),
    (
        "response inserted",
        sql(_INSERT_RESPONSE),
        "ingest batch 1: its stored responses changed",
        {},
    ),
    (
        "response moved to another system",
        sql("UPDATE response SET system_id = 1 WHERE system_id = 2"),
        "ingest batch 1: its stored responses changed",
        {},
    ),
    (
        "tally count edited",
        sql("UPDATE response_tally SET n = n + 1 WHERE id = (SELECT min(id) FROM response_tally)"),
        "response tally: 1 distinct answer count(s) no longer match",
        {},
    ),
    (
        "tally answer moved",
        sql(
            "UPDATE response_tally SET parsed_answer = 'option1' "
            "WHERE parsed_answer = 'option2' AND probe = 'what_if'"
        ),
        "response tally:",
        {},
    ),
    (
        "batch counts edited",
        sql("UPDATE ingest_batch SET quarantined = 0 WHERE id = 1"),
        "ingest batch 1: its record changed",
        {},
    ),
    (
        "batch inserted",
        sql(
            "INSERT INTO ingest_batch (source_path, source_sha256, format, status, lines_read, stored, duplicate, quarantined, started_at) VALUES ('x', 'x', 'generic', 'completed', 0, 0, 0, 0, '2026-01-01')"
        ),
        "ingest batch 2 has no ledger entry",
        {},
    ),
    (
        "run settings edited",
        sql("UPDATE run SET settings = '{\"temperature\": 1}'"),
        "ingest batch 1: its run's record",
        {},
    ),
    (
        "quarantined line deleted",
        sql("DELETE FROM quarantine"),
        "ingest batch 1: its quarantined lines,",
        {},
    ),
    (
        "quarantine reason edited",
        sql("UPDATE quarantine SET reason = 'fine'"),
        "ingest batch 1: its quarantined lines changed",
        {},
    ),
    (
        "system metadata edited",
        sql("UPDATE system SET provider = 'someone else' WHERE id = 1"),
        "system 1: its record changed",
        {},
    ),
    (
        "system renamed",
        sql("UPDATE system SET name = 'renamed' WHERE id = 3"),
        "system 3: its record changed",
        {},
    ),
    (
        "benefit option flipped",
        sql(
            "UPDATE dilemma SET benefit_option = CASE benefit_option WHEN 'option1' THEN 'option2' ELSE 'option1' END WHERE id = 1"
        ),
        "item bank 1: its dilemmas changed",
        {},
    ),
    (
        "individual edited",
        sql(
            "UPDATE item_individual SET gender = gender || 'x' WHERE id = (SELECT MIN(id) FROM item_individual)"
        ),
        # The gender column no longer matches its axis row either (revision 0007).
        "item bank 1: its individuals, its individuals' demographic axes changed",
        {},
    ),
    # the report registry and files
    (
        "registered hash and file edited together",
        rehash_report_and_file,
        "registered report 1: its record changed",
        {},
    ),
    (
        "report path changed",
        sql("UPDATE report SET path = '/tmp/elsewhere.html' WHERE id = 1"),
        "registered report 1: its record changed",
        {},
    ),
    (
        "report analysis changed",
        sql("UPDATE report SET analysis_id = 2 WHERE id = 1"),
        "registered report 1: its record changed",
        {},
    ),
    (
        "stored reviewed HTML edited",
        sql("UPDATE report SET html = replace(html, 'inconclusive', 'passed') WHERE id = 1"),
        "registered report 1: its record changed",
        {},
    ),
    (
        "signed report row deleted",
        sql("DELETE FROM signoff WHERE report_id = 2", "DELETE FROM report WHERE id = 2"),
        "registered report 2 was deleted",
        {},
    ),
    ("report file byte changed", file_edit("html", "flip"), "report 1: ", {}),
    ("PDF byte changed", file_edit("pdf", "flip"), "report 2: ", {}),
    ("report file deleted", file_edit("pdf", "delete"), "is missing", {}),
    # sign-offs
    (
        "decision edited",
        sql("UPDATE signoff SET decision = 'approve' WHERE seq = 2"),
        "sign-off 2 (report 2, Bo): its content was edited",
        {},
    ),
    (
        "reviewer edited",
        sql("UPDATE signoff SET reviewer = 'Eve' WHERE seq = 1"),
        "its content was edited after signing",
        {},
    ),
    (
        "first sign-off deleted",
        sql("DELETE FROM signoff WHERE seq = 1"),
        "sign-off 1 was deleted",
        {},
    ),
    (
        "newest sign-off deleted",
        sql("DELETE FROM signoff WHERE seq = 2"),
        "sign-off 2 was deleted",
        {},
    ),
    (
        "sign-offs reordered",
        sql(
            "UPDATE signoff SET seq = -1 WHERE seq = 1",
            "UPDATE signoff SET seq = 1 WHERE seq = 2",
            "UPDATE signoff SET seq = 2 WHERE seq = -1",
        ),
        "its link to the previous record is broken",
        {},
    ),
    (
        "forged sign-off appended",
        lambda c, s: forge_signoff(c, s, with_ledger=False),
        "sign-off 3 has no ledger entry",
        {},
    ),
    (
        "forged sign-off with a forged ledger entry",
        lambda c, s: forge_signoff(c, s, with_ledger=True),
        "sign-off 3 (report 2, Mallory): not signed by a trusted key",
        {"trust": True},
    ),
    # the ledger itself
    (
        "ledger entry edited",
        sql("UPDATE ledger SET digest = 'x' WHERE seq = 3"),
        "ledger entry 3",
        {},
    ),
    (
        "ledger entry deleted",
        sql("DELETE FROM ledger WHERE seq = 4"),
        "ledger: entries 4–4 are missing",
        {},
    ),
    (
        "ledger entries reordered",
        sql(
            "UPDATE ledger SET seq = -1 WHERE seq = 3",
            "UPDATE ledger SET seq = 3 WHERE seq = 4",
            "UPDATE ledger SET seq = 4 WHERE seq = -1",
        ),
        "its link to the previous entry is broken",
        {},
    ),
    ("genesis deleted", sql("DELETE FROM ledger WHERE seq = 1"), "genesis) entry is missing", {}),
    ("ledger truncated at the end", truncate_end, "the ledger was truncated", {"witness": True}),
    ("whole ledger rewritten", rewrite_chain, "the ledger was rewritten", {"witness": True}),
]


def _verify(engine: Engine, s: Signed, opts: dict):
    return verify(
        engine,
        witness=s.root / "witness.jsonl" if opts.get("witness") else None,
        trusted=[s.pub] if opts.get("trust") else None,
    )


def test_control_copy_verifies(signed: Signed, copy: Engine) -> None:
    """With no edit, everything is intact, with the witness and the keys too."""
    result = verify(copy, witness=signed.root / "witness.jsonl")
    assert result.ok, result.problems
    assert result.reports == 2 and result.signoffs == 2 and result.artifacts == 1
    assert result.entries >= 10
    # Only Ada signed with a key: --trust names Bo's unsigned sign-off, and only it.
    trusted = verify(copy, trusted=[signed.pub]).problems
    assert trusted == ["sign-off 2 (report 2, Bo): not signed by a trusted key"]


@pytest.mark.parametrize(("label", "edit", "expected", "opts"), CASES, ids=[c[0] for c in CASES])
def test_tampering_is_named(
    signed: Signed, copy: Engine, label: str, edit: Edit, expected: str, opts: dict
) -> None:
    with copy.begin() as conn:
        edit(conn, signed)
    result = _verify(copy, signed, opts)
    assert not result.ok, f"{label}: not detected"
    assert any(expected in p for p in result.problems), (label, result.problems)


def test_tamper_suite_has_the_issue_s_39_kinds() -> None:
    assert len(CASES) >= 39 and len({c[0] for c in CASES}) == len(CASES)


def test_truncation_and_rewrite_need_the_witness(signed: Signed, copy: Engine) -> None:
    """Without a witness the whole-ledger rewrite is not provable from the store alone, and
    verify says so instead of claiming the store is intact beyond doubt."""
    with copy.begin() as conn:
        truncate_end(conn, signed)
    result = verify(copy)
    assert result.ok
    assert any("no witness file given" in lim for lim in result.limits)


def test_response_digest_covers_every_response_column() -> None:
    """A new response column must be added to the ledger's list on purpose (a new digest
    version), or be left out knowingly: this test makes that a decision, not an accident."""
    from cuegap.schema import Response

    assert set(ledger.RESPONSE_COLUMNS) == set(Response.__table__.columns.keys())


# --------------------------------------------------------------------------- the QA design

_QA_RESP = "(SELECT MIN(id) FROM qa_response)"
QA_CASES: list[tuple[str, str | tuple[str, ...], str]] = [
    (
        "QA tally count edited",
        "UPDATE qa_tally SET n = n + 1 WHERE id = (SELECT min(id) FROM qa_tally)",
        "QA answer tally: 1 answer count(s) no longer match",
    ),
    (
        "QA answer edited",
        "UPDATE qa_response SET answer = 'target' WHERE answer = 'unknown'",
        "ingest batch 1: its stored QA responses changed",
    ),
    (
        "QA raw text edited",
        f"UPDATE qa_response SET raw_text = 'A' WHERE id = {_QA_RESP}",
        "ingest batch 1: its stored QA responses changed",
    ),
    (
        "QA response deleted",
        (
            f"DELETE FROM qa_response_factor WHERE response_id = {_QA_RESP}",
            f"DELETE FROM qa_response WHERE id = {_QA_RESP}",
        ),
        "ingest batch 1: its stored QA responses, its QA responses' prompt factors changed",
    ),
    (
        "QA factor row deleted",
        "DELETE FROM qa_response_factor WHERE name = 'choice_format'",
        "ingest batch 1: its QA responses' prompt factors changed",
    ),
    (
        "QA strategy edited",
        "UPDATE qa_response_factor SET value = 'safety' WHERE value = 'cot'",
        "ingest batch 1: its QA responses' prompt factors changed",
    ),
    (
        "QA option role changed",
        "UPDATE qa_option SET role = 'non_target' WHERE id = "
        "(SELECT MIN(id) FROM qa_option WHERE role = 'target')",
        "item bank 1: its QA answer options (text, role) changed",
    ),
    (
        "QA gold option changed",
        "UPDATE qa_item SET gold_index = 0 WHERE item_key = 'age-573'",
        "item bank 1: its QA items changed",
    ),
    (
        "QA option axis edited",
        "UPDATE qa_option_axis SET value = 'old' WHERE value = 'nonOld'",
        "item bank 1: its QA options' demographic axes changed",
    ),
]


@pytest.mark.parametrize(("label", "edit", "expected"), QA_CASES, ids=[c[0] for c in QA_CASES])
def test_qa_tampering_is_named(
    engine: Engine, label: str, edit: str | tuple[str, ...], expected: str
) -> None:
    """A QA bank and its results are sealed like the dilemma design's: each edit is named
    (the store verifies before it, so the cases can fail)."""
    from conftest import DATA

    ingest_path(engine, DATA / "qa" / "bbq_small.jsonl")
    ingest_path(engine, DATA / "qa" / "bbq_results.jsonl")
    before = verify(engine)
    assert before.ok, before.problems
    with engine.begin() as conn:
        for statement in (edit,) if isinstance(edit, str) else edit:
            assert conn.execute(text(statement)).rowcount > 0, label
    result = verify(engine)
    assert any(expected in p for p in result.problems), (label, result.problems)


def test_qa_digest_covers_every_qa_response_column() -> None:
    from cuegap.schema import QAResponse
    from cuegap.schema._qa_ledger import QA_RESPONSE_COLUMNS

    assert set(QA_RESPONSE_COLUMNS) == set(QAResponse.__table__.columns.keys())
