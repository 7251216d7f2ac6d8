"""Append-reseal: an edit sealed by one more ledger entry is still caught, in every design.

The attack (issue 30): edit something in the store, then append one ledger entry that seals
the edited content. The older entries, the witness file's head and the heads the sign-offs
recorded all stay intact. Each case below makes one such edit on a fresh copy of a signed
store of each design, on SQLite and PostgreSQL, and ``verify`` must fail both with and
without the witness file and trusted keys. The control case makes no edit and must pass.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import PG_URL, REQUIRE_PG, _pg_admin_url, restored, store_copy
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, Engine, make_url
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.compliance import ComplianceError, verify
from cuegap.schema import ledger, make_engine

runner = CliRunner()
DESIGNS = ("dilemma", "qa", "prompt-variance", "conversation")


@dataclass
class Signed:
    design: str
    url: str
    root: Path
    keys: list[str]
    report_id: int


def _cli(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, (args, res.output)
    return res.output


def _build(url: str, root: Path, design: str) -> Signed:
    db = ["--db", url]
    data = root / "data"
    systems = "2" if design == "prompt-variance" else "1"  # its rank statistics need two
    _cli("simulate", str(data), "--design", design, "--systems", systems, "--seed", "5")
    _cli(*db, "ingest", str(data))
    _cli(*db, "analyze", "--design", design, "--boot", "20")
    _cli(*db, "report", "--design", design, "--out", str(root / "reports"), "--format", "html")
    for name in ("Ada", "Bo"):
        _cli("keygen", str(root / f"{name}.key"), "--reviewer", name)
    _cli(
        *db,
        "signoff",
        "1",
        "--reviewer",
        "Ada",
        "--decision",
        "approve",
        "--key",
        str(root / "Ada.key"),
    )
    _cli(*db, "witness", str(root / "witness.jsonl"))
    keys = [str(root / "Ada.key.pub"), str(root / "Bo.key.pub")]
    if url.startswith("sqlite"):  # the copies are file copies: fold the WAL into the file
        engine = make_engine(url)
        with engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        engine.dispose()
    return Signed(design, url, root, keys, 1)


@pytest.fixture(
    scope="module",
    params=[(d, b) for b in ("sqlite", "postgresql") for d in DESIGNS],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def signed(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Signed]:
    design, backend = request.param
    root = tmp_path_factory.mktemp(f"reseal-{design}-{backend}")
    if backend == "sqlite":
        yield _build(f"sqlite:///{root / 'store.db'}", root, design)
        return
    if not PG_URL:
        if REQUIRE_PG:
            pytest.fail("CUEGAP_REQUIRE_PG=1 but CUEGAP_TEST_PG_URL is not set")
        pytest.skip("no PostgreSQL server: set CUEGAP_TEST_PG_URL")
    name = f"cuegap_reseal_{uuid.uuid4().hex[:10]}"
    admin = create_engine(_pg_admin_url(), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(_pg_admin_url()).set(database=name).render_as_string(hide_password=False)
    try:
        built = _build(url, root, design)
        with admin.connect() as conn:  # the CLI's pooled connections: a template has none
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :n AND pid <> pg_backend_pid()"
                ),
                {"n": name},
            )
        yield built
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def copy(signed: Signed, tmp_path: Path) -> Iterator[Engine]:
    with restored(signed.root / "reports"), store_copy(signed.url, tmp_path) as url:
        engine = make_engine(url)
        yield engine
        engine.dispose()


# --------------------------------------------------------------------------- edits

Edit = Callable[[Connection], None]


def _batch_of(conn: Connection, table: str) -> int:
    return int(conn.execute(text(f"SELECT batch_id FROM {table} ORDER BY id LIMIT 1")).scalar())


def edit_result(conn: Connection) -> None:
    """Verdict rows edited to 'passed' (any result table where there is no verdict table)."""
    n = conn.execute(
        text(
            "UPDATE analysis_table SET data = replace(data, 'inconclusive', 'passed') "
            "WHERE name = 'verdicts'"
        )
    ).rowcount
    if not n:
        conn.execute(
            text(
                "UPDATE analysis_table SET data = replace(data, '0', '1') WHERE id = "
                "(SELECT MIN(id) FROM analysis_table WHERE analysis_id = 1)"
            )
        )
    ledger.record(conn, "analysis", 1)


def edit_answer(conn: Connection) -> None:
    """One stored answer's raw text changed, whichever design's table holds it."""
    for table, col in (
        ("response", "raw_text"),
        ("qa_response", "raw_text"),
        ("conversation", "raw"),
    ):
        if conn.execute(text(f"SELECT COUNT(*) FROM {table}")).scalar():
            conn.execute(
                text(
                    f"UPDATE {table} SET {col} = {col} || ' (edited)' WHERE id = "
                    f"(SELECT MIN(id) FROM {table})"
                )
            )
            ledger.record(conn, "batch", _batch_of(conn, table))
            return
    raise AssertionError("no stored answers")


def edit_reviewed_html(conn: Connection) -> None:
    """The reviewed HTML kept for the signed report edited."""
    conn.execute(text("UPDATE report SET html = replace(html, 'flagged', 'passed') WHERE id = 1"))
    conn.execute(text("UPDATE report SET html = html || ' ' WHERE id = 1"))
    ledger.record(conn, "report", 1)


def resolve_quarantine(conn: Connection) -> None:
    """Quarantined lines marked resolved, so that status counts none."""
    conn.execute(text("UPDATE quarantine SET resolved_at = CURRENT_TIMESTAMP"))
    ledger.record(conn, "batch", _batch_of(conn, "quarantine"))


def edit_snapshot(conn: Connection) -> None:
    """A conversation's config snapshot edited (one key added)."""
    new = (
        "json_set(snapshot, '$.edited', json('true'))"
        if conn.dialect.name == "sqlite"
        else "CAST(jsonb_set(CAST(snapshot AS jsonb), '{edited}', 'true') AS JSON)"
    )
    conn.execute(
        text(
            f"UPDATE conv_config SET snapshot = {new} WHERE id = (SELECT MIN(id) FROM conv_config)"
        )
    )
    ledger.record(conn, "batch", _batch_of(conn, "conversation"))


CASES: dict[str, tuple[Edit, str]] = {
    "verdicts edited and re-sealed": (edit_result, "analysis 1 was re-sealed"),
    "answer edited and re-sealed": (edit_answer, "was re-sealed in ledger entry"),
    "reviewed HTML edited and re-sealed": (edit_reviewed_html, "registered report 1 was re-sealed"),
    "quarantine resolved and re-sealed": (resolve_quarantine, "quarantined lines' resolution"),
    "config snapshot edited and re-sealed": (edit_snapshot, "config snapshots"),
}
CONV_ONLY = {"quarantine resolved and re-sealed", "config snapshot edited and re-sealed"}


@pytest.mark.parametrize("case", list(CASES))
def test_an_edit_sealed_by_an_appended_entry_fails_verify(
    case: str, signed: Signed, copy: Engine
) -> None:
    if case in CONV_ONLY and signed.design != "conversation":
        pytest.skip("the simulated store of this design has no conversations or quarantine")
    edit, expected = CASES[case]
    assert verify(copy, witness=signed.root / "witness.jsonl", trusted=signed.keys).ok
    with copy.begin() as conn:
        edit(conn)
    anchored = verify(copy, witness=signed.root / "witness.jsonl", trusted=signed.keys)
    plain = verify(copy)
    for result in (anchored, plain):
        assert not result.ok
        assert any(expected in p for p in result.problems), result.problems
    assert any("not covered by any outside anchor" in lim for lim in anchored.limits)


def test_the_unedited_copy_verifies_with_anchors(signed: Signed, copy: Engine) -> None:
    """The control: no edit, no problem, and nothing sealed after the newest anchor."""
    result = verify(copy, witness=signed.root / "witness.jsonl", trusted=signed.keys)
    assert result.ok, result.problems
    assert not any("outside anchor" in lim for lim in result.limits)


def test_a_signed_copy_of_re_sealed_html_is_refused(
    signed: Signed, copy: Engine, tmp_path: Path
) -> None:
    from cuegap.publish import publish_signed

    publish_signed(copy, 1, tmp_path / "before", formats=("html",))  # intact: works
    with copy.begin() as conn:
        edit_reviewed_html(conn)
    with pytest.raises(ComplianceError, match=r"re-sealed|not the file that was signed"):
        publish_signed(copy, 1, tmp_path / "after", formats=("html",))


# --------------------------------------------------------------------------- keys and names


def test_a_key_signs_only_for_its_own_reviewer(signed: Signed, copy: Engine) -> None:
    """Bo's key cannot sign as Ada: signoff refuses, and a sign-off made with Bo's key
    stripped of its name fails verify with both names."""
    from cuegap.compliance import sign_off

    if signed.design != "dilemma":
        pytest.skip("one design is enough: keys do not depend on the design")
    bo_key = signed.root / "Bo.key"
    with pytest.raises(ComplianceError, match="belongs to 'Bo', not 'Ada'"):
        sign_off(copy, 1, reviewer="Ada", decision="approve", key=bo_key)
    stripped = signed.root / "Bo-unnamed.key"
    data = bo_key.read_bytes()
    stripped.write_bytes(data[data.index(b"-----BEGIN") :])
    sign_off(copy, 1, reviewer="Ada", decision="approve", key=stripped)
    problems = verify(copy, trusted=signed.keys).problems
    assert any("names the reviewer 'Ada'" in p and "the key of 'Bo'" in p for p in problems), (
        problems
    )
    res = runner.invoke(
        app,
        [
            "--db",
            str(copy.url.render_as_string(hide_password=False)),
            "verify",
            "--trust",
            signed.keys[0],
            "--trust",
            signed.keys[1],
        ],
    )
    assert res.exit_code == 1 and "'Bo'" in res.output and "'Ada'" in res.output


def test_a_key_without_a_name_must_be_bound_on_the_command_line(
    signed: Signed, tmp_path: Path, copy: Engine
) -> None:
    from cuegap.compliance._keys import load_trusted_keys

    if signed.design != "dilemma":
        pytest.skip("one design is enough")
    data = Path(signed.keys[0]).read_bytes()
    old = tmp_path / "old.pub"
    old.write_bytes(data[data.index(b"-----BEGIN") :])  # as an older keygen wrote it
    with pytest.raises(ComplianceError, match="names no reviewer"):
        load_trusted_keys([old])
    assert verify(copy, trusted=[f"Ada={old}", signed.keys[1]]).ok
    with pytest.raises(ComplianceError, match="bound to 'Ada', not 'Bo'"):
        load_trusted_keys([f"Bo={signed.keys[0]}"])
    assert not verify(copy, trusted=[f"Bo={old}"]).ok  # Ada's sign-off under Bo's name


def test_a_key_binds_a_hostile_name_as_one_quoted_line(tmp_path: Path) -> None:
    """A reviewer name with line breaks and escapes stays one JSON-quoted line before the
    PEM block, and reads back exactly."""
    from cuegap.compliance._keys import bound_reviewer, generate_key, load_pem

    name = 'Ada\n-----BEGIN PUBLIC KEY-----\n"\x1b[2J'
    _, pub, _ = generate_key(tmp_path / "k", reviewer=name)
    data = pub.read_bytes()
    lines = data.split(b"\n")
    assert lines[0].startswith(b'cuegap-reviewer: "') and lines[1] == b"-----BEGIN PUBLIC KEY-----"
    assert bound_reviewer(data) == name.strip()
    assert load_pem(pub, private=False)[1] == name.strip()  # a PEM reader still finds the key
