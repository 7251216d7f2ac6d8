"""``cuegap export --evidence``: the evidence bundle validates against its shipped JSON
Schema, and its in-toto attestation is checked with tools that are not cuegap's.

The DSSE envelope is verified with securesystemslib (its ``Envelope`` and ``SSlibKey``),
and again with ``cryptography`` over a pre-authentication encoding written here from the
DSSE specification (protocol.md: ``PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP
LEN(body) SP body``). Subjects are checked against ``hashlib`` digests of the report files.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

import jsonschema
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey
from sqlalchemy import select
from typer.testing import CliRunner

import cuegap
from cuegap.audit import load_table
from cuegap.cli import app
from cuegap.compliance import ComplianceError, generate_key, sign_off
from cuegap.evidence import evidence_schema, pae, write_evidence
from cuegap.schema import LedgerEntry, make_engine, upgrade
from tests.conftest import pg_database

ROOT = Path(__file__).resolve().parents[1]
IN_TOTO = "application/vnd.in-toto+json"


def spec_pae(payload_type: str, body: bytes) -> bytes:
    """DSSE protocol.md's PAE, written from the specification (not cuegap's code)."""
    t = payload_type.encode("utf-8")
    return b" ".join([b"DSSEv1", str(len(t)).encode(), t, str(len(body)).encode(), body])


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def audited(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A QA store with an analysis, an HTML report signed with a reviewer's key, and its
    evidence written with that key; on each backend."""
    root = tmp_path_factory.mktemp(f"evidence-{request.param}")
    if request.param == "sqlite":
        ctx = None
        url = f"sqlite:///{root / 'store.db'}"
    else:
        ctx = pg_database()
        url = ctx.__enter__()
    try:
        audit = cuegap.open(url, create=True, quiet=True)
        audit.ingest(audit.simulate("qa", root / "data", systems=2, seed=5))
        audit.analyze(boot=40)
        published = audit.report(out=root / "reports", formats=("html",))
        key, pub, _kid = generate_key(root / "ada", reviewer="Ada O'Neil <ada@example.org>")
        sign_off(audit.engine, published["html"][1], reviewer="Ada O'Neil <ada@example.org>",
                 decision="approve", key=key)  # fmt: skip
        files = write_evidence(audit.engine, root / "evidence", key=key)
        yield audit, files, pub, published["html"][0], root
        audit.close()
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)


def _envelope(files) -> dict:
    lines = files.envelope.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1  # one envelope per line (.intoto.jsonl)
    return json.loads(lines[0])


def _sslib_verify(env: dict, pub_path: Path) -> bytes:
    """Verify with securesystemslib; returns the payload it verified."""
    public = serialization.load_pem_public_key(pub_path.read_bytes())
    keyids = [s["keyid"] for s in env.get("signatures", [])]
    key = SSlibKey.from_crypto(public, keyid=keyids[0] if keyids else "none")
    parsed = Envelope.from_dict(copy.deepcopy(env))  # from_dict rewrites its input
    parsed.verify([key], 1)
    return parsed.payload


def test_the_schema_ships_in_the_package_and_is_valid() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["cuegap"]
    schema_path = "evidence/schemas/evidence-bundle.schema.json"
    assert (ROOT / "cuegap" / schema_path).is_file()
    assert any(fnmatch(schema_path, g) for g in globs)
    jsonschema.Draft202012Validator.check_schema(evidence_schema())


def test_a_real_bundle_validates_and_says_what_the_store_holds(audited) -> None:
    audit, files, _pub, report, _root = audited
    bundle = json.loads(files.bundle.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(evidence_schema()).validate(bundle)
    # the report's digest is the file's, computed here
    (rep,) = bundle["reports"]
    assert rep["sha256"] == hashlib.sha256(report.read_bytes()).hexdigest()
    assert rep["file"] == "matches" and rep["file_name"] == report.name
    # the verdict records are the stored table's rows, with their analysis
    stored = load_table(audit.engine, "verdict_records")
    assert sorted(r["system"] for r in bundle["verdict_records"]) == sorted(stored["system"])
    assert {r["decision"] for r in bundle["verdict_records"]} == set(stored["decision"])
    assert [r["estimate"] for r in sorted(bundle["verdict_records"], key=lambda r: r["system"])] \
        == pytest.approx(list(stored.sort_values("system")["estimate"]))  # fmt: skip
    # the ledger head is the newest ledger row, and the sign-off chain ends in it
    with audit.engine.connect() as conn:
        newest = conn.execute(select(LedgerEntry).order_by(LedgerEntry.seq.desc())).first()
    assert bundle["ledger"]["head"]["entry_hash"] == newest.entry_hash
    (so,) = bundle["signoffs"]
    assert so["reviewer"] == "Ada O'Neil <ada@example.org>" and so["decision"] == "approve"
    assert so["report_sha256"] == rep["sha256"]
    # the analysis carries its policy and fingerprints
    (analysis,) = [a for a in bundle["analyses"] if a["id"] == rep["analysis_id"]]
    assert analysis["current"] and analysis["shown_by_reports"] == [rep["id"]]
    assert analysis["policy"]["probability"] == pytest.approx(0.95)
    assert set(analysis["system_fingerprints"]) == set(stored["system"])


def test_securesystemslib_verifies_the_envelope_and_the_subjects(audited) -> None:
    _audit, files, pub, report, _root = audited
    env = _envelope(files)
    assert env["payloadType"] == IN_TOTO
    stmt = json.loads(_sslib_verify(env, pub))
    assert stmt["_type"] == "https://in-toto.io/Statement/v1"
    assert stmt["predicateType"].startswith("urn:cuegap:")
    assert stmt["subject"] == [
        {"name": report.name, "digest": {"sha256": hashlib.sha256(report.read_bytes()).hexdigest()}}
    ]
    bundle_bytes = files.bundle.read_bytes()
    predicate = stmt["predicate"]
    assert (
        predicate["evidence_bundle"]["digest"]["sha256"] == hashlib.sha256(bundle_bytes).hexdigest()
    )
    bundle = json.loads(bundle_bytes)
    assert predicate["verdict_records"] == bundle["verdict_records"]
    of_record = {r["analysis_id"] for r in bundle["verdict_records"]}
    policies = [a["policy"] for a in bundle["analyses"] if a["id"] in of_record]
    assert [a["policy"] for a in predicate["analyses"]] == policies
    assert predicate["signer"]["reviewer"] == "Ada O'Neil <ada@example.org>"


def test_the_signature_checks_over_the_specs_pae_with_plain_cryptography(audited) -> None:
    _audit, files, pub, _report, _root = audited
    env = _envelope(files)
    payload = base64.b64decode(env["payload"])
    public = serialization.load_pem_public_key(pub.read_bytes())
    (sig,) = env["signatures"]
    public.verify(base64.b64decode(sig["sig"]), spec_pae(env["payloadType"], payload))
    # the spec's own test vector, for cuegap's encoder
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    assert pae("tybé", b"x") == spec_pae("tybé", b"x") == b"DSSEv1 5 tyb\xc3\xa9 1 x"


def test_tampering_fails_verification(audited, tmp_path: Path) -> None:
    _audit, files, pub, report, _root = audited
    env = _envelope(files)
    stmt = json.loads(base64.b64decode(env["payload"]))
    # a changed verdict in the payload
    forged = copy.deepcopy(stmt)
    forged["predicate"]["verdict_records"][0]["decision"] = "passed"
    forged["predicate"]["verdict_records"][0]["reason"] = "nothing to see"
    bad = dict(env, payload=base64.b64encode(json.dumps(forged).encode()).decode())
    with pytest.raises(VerificationError):
        _sslib_verify(bad, pub)
    # the same payload under another type
    with pytest.raises(VerificationError):
        _sslib_verify(dict(env, payloadType="application/json"), pub)
    # signed by another key, under the reviewer's key id
    other = Ed25519PrivateKey.generate()
    forged_sig = other.sign(spec_pae(IN_TOTO, base64.b64decode(env["payload"])))
    keyid = env["signatures"][0]["keyid"]
    resigned = dict(
        env, signatures=[{"keyid": keyid, "sig": base64.b64encode(forged_sig).decode()}]
    )
    with pytest.raises(VerificationError):
        _sslib_verify(resigned, pub)
    public = serialization.load_pem_public_key(pub.read_bytes())
    with pytest.raises(InvalidSignature):
        public.verify(base64.b64decode(env["signatures"][0]["sig"]),
                      spec_pae(IN_TOTO, json.dumps(forged).encode()))  # fmt: skip
    # a report file changed by one byte no longer has the attested digest
    copied = tmp_path / report.name
    data = bytearray(report.read_bytes())
    data[len(data) // 2] ^= 1
    copied.write_bytes(bytes(data))
    attested = {s["name"]: s["digest"]["sha256"] for s in stmt["subject"]}
    assert hashlib.sha256(copied.read_bytes()).hexdigest() != attested[report.name]
    assert hashlib.sha256(report.read_bytes()).hexdigest() == attested[report.name]


def test_unsigned_evidence_carries_no_signature_and_never_replaces_a_file(audited) -> None:
    audit, files, pub, _report, root = audited
    again = write_evidence(audit.engine, root / "evidence")  # no key
    assert again.bundle != files.bundle and again.envelope != files.envelope
    assert files.bundle.is_file() and not again.signed
    env = json.loads(again.envelope.read_text())
    assert env["signatures"] == []
    with pytest.raises(VerificationError):
        _sslib_verify(env, pub)
    assert json.loads(base64.b64decode(env["payload"]))["predicate"]["signer"] is None


def test_a_store_without_reports_has_nothing_to_attest(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 's.db'}")
    upgrade(engine)
    with pytest.raises(ComplianceError, match="no registered report"):
        write_evidence(engine, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_command_line(audited) -> None:
    audit, _files, pub, _report, root = audited
    url = audit.engine.url.render_as_string(hide_password=False)
    run = CliRunner().invoke(app, ["--db", url, "export", "--evidence", str(root / "cli"),
                                   "--key", str(root / "ada")], env={"COLUMNS": "200"})  # fmt: skip
    assert run.exit_code == 0, run.output
    assert "signed" in run.output
    env = json.loads((root / "cli" / "cuegap-evidence.intoto.jsonl").read_text())
    assert json.loads(_sslib_verify(env, pub))["_type"] == "https://in-toto.io/Statement/v1"
    for args in (["export", "--evidence", str(root / "x"), "verdict_records"],
                 ["export", "verdict_records", "--key", str(root / "ada"), "--out", "v.csv"],
                 ["export"]):  # fmt: skip
        bad = CliRunner().invoke(app, ["--db", url, *args])
        assert bad.exit_code == 2, bad.output
    assert not (root / "x").exists()


DOC = ROOT / "docs" / "evidence.md"


def _doc_block(language: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    (block,) = re.findall(rf"^```{language}\n(.*?)^```", text, re.M | re.S)
    return block


def _as_documented(audited, where: Path) -> Path:
    """The files laid out under the names docs/evidence.md uses; returns the report."""
    _audit, files, pub, report, _root = audited
    assert report.name == "cuegap-report-1.html"
    for src, dest in ((files.envelope, "evidence/cuegap-evidence.intoto.jsonl"),
                      (pub, "ada.key.pub"), (report, "reports/cuegap-report-1.html")):  # fmt: skip
        (where / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, where / dest)
    return where / "reports" / "cuegap-report-1.html"


def _tamper(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x20
    path.write_bytes(bytes(data))


def test_the_documented_python_check_passes_and_catches_a_changed_report(
    audited, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    code = compile(_doc_block("python"), "docs/evidence.md", "exec")
    copied = _as_documented(audited, tmp_path)
    monkeypatch.chdir(tmp_path)
    exec(code, {"__name__": "__evidence__"})
    assert "sim-qa-system-01 qa" in capsys.readouterr().out
    _tamper(copied)
    with pytest.raises(AssertionError, match="is not the attested report"):
        exec(code, {"__name__": "__evidence__"})


@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("jq", "openssl", "base64", "sha256sum")),
    reason="the documented shell check needs jq, openssl, base64 and sha256sum",
)
def test_the_documented_shell_check_passes_and_catches_a_changed_report(
    audited, tmp_path: Path
) -> None:
    script = "set -euo pipefail\n" + _doc_block("bash")
    copied = _as_documented(audited, tmp_path)
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "Signature Verified Successfully" in run.stdout
    assert "the report is the attested one" in run.stdout
    _tamper(copied)
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0 and "the report is the attested one" not in run.stdout
    # a payload signed by no one fails OpenSSL's check
    (tmp_path / "reports" / "cuegap-report-1.html").write_bytes(audited[3].read_bytes())
    env_path = tmp_path / "evidence" / "cuegap-evidence.intoto.jsonl"
    env = json.loads(env_path.read_text())
    stmt = json.loads(base64.b64decode(env["payload"]))
    stmt["predicate"]["verdict_records"][0]["decision"] = "passed"
    env["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    env_path.write_text(json.dumps(env) + "\n")
    run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode != 0 and "Signature Verified Successfully" not in run.stdout


def test_a_link_at_an_output_name_is_never_followed(audited, tmp_path: Path) -> None:
    audit, _files, _pub, _report, _root = audited
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"do not touch\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "cuegap-evidence.json").symlink_to(victim)
    written = write_evidence(audit.engine, out)
    assert victim.read_bytes() == b"do not touch\n"
    assert written.bundle.name == "cuegap-evidence-2.json" and not written.bundle.is_symlink()
    jsonschema.Draft202012Validator(evidence_schema()).validate(
        json.loads(written.bundle.read_text())
    )
