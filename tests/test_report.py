"""Audit reports: content, escaping of untrusted text, no fetches, determinism, PDF, browser.

The store is built once per module: an item bank of 30 dilemmas (individuals A-D: man /
woman x Asian / Black), three systems and a payload file.

* ``steady`` answers every What-if the same way under Direct and Puzzled-hard (a seeded
  random choice per dilemma and individual), so its gap is exactly 0 in every bootstrap
  replicate: P(|gap| < δ) = 1 -> **passed**.
* ``performative`` picks the option that benefits the described person under Direct and
  leaves it under Puzzled-hard: Net(Direct) > 0 > Net(Puzzled), gap >> δ -> **flagged**.
* a system named ``<img src=x onerror=...>`` answers like ``steady`` but its first What-if
  is a script payload (an abstention) -> passed; its name is itself a payload.
* The payload file carries lines that are quarantined (unknown item, not JSON) with HTML,
  script, remote-URL and ``file:`` payloads.

With the default policy (min_parsable 200) all verdicts would be inconclusive: 30 dilemmas
give 120 decisions per condition. The tests use ``min_parsable = 50``.

Browser and poppler tests skip when ``chromium`` / ``pdftoppm`` are missing, and fail
instead with ``CUEGAP_REQUIRE_BROWSER=1`` (as ``.ci/run`` sets).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import delete, update
from typer.testing import CliRunner

from cuegap.audit import latest_analysis_id, save_analysis
from cuegap.cli import app
from cuegap.designs.dilemma._analysis import analyze
from cuegap.designs.dilemma._analysis_settings import AnalysisSettings
from cuegap.designs.dilemma._report import build_report
from cuegap.ingest import ingest_path
from cuegap.models import Policy
from cuegap.reports import (
    TEMPLATES_DIR,
    RefusedFetch,
    TemplateOnlyFetcher,
    content_hash,
    render_html,
    render_pdf,
    write_report,
)
from cuegap.schema import Analysis, AnalysisTable, IngestBatch, make_engine, upgrade
from cuegap.terminal import BIDI_CONTROLS, show_bidi
from tests.conftest import need_pdf

REQUIRE_BROWSER = os.environ.get("CUEGAP_REQUIRE_BROWSER") == "1"
POLICY = Policy(min_parsable=50)
N_DILEMMAS = 30
PEOPLE = [
    {"label": "A", "gender": "man", "race": "Asian"},
    {"label": "B", "gender": "man", "race": "Black"},
    {"label": "C", "gender": "woman", "race": "Asian"},
    {"label": "D", "gender": "woman", "race": "Black"},
]
MARK = "document.documentElement.setAttribute('data-pwned',"
SCRIPT = f"<script>window.__pwned=1;{MARK}'script')</script>"
IMG = f"<img src=x onerror=\"{MARK}'img')\">"
SVG = f"<svg onload=\"{MARK}'svg')\"></svg>"
REMOTE = '<img src="https://example.com/x.png"> <iframe src="file:///etc/passwd"></iframe>'
# A right-to-left override in a name or a response would reorder the text after it
# (issue 30 item 7): reports show every bidi control as its escape, e.g. \u202e.
RLO = "\u202e"
EVIL_SYSTEM = f"<img src=x onerror=\"{MARK}'name')\">{RLO}lmth.eman"
BIDI_RESPONSE = f"bidi {RLO}fdp.exe \u2066isolated\u2069 \u200fmark\u061c"
SYSTEMS = ("performative", "steady", EVIL_SYSTEM)


def assert_bidi_shown(text: str, *, escapes: tuple[str, ...] = ("\\u202e",)) -> None:
    """No bidirectional-text control in ``text`` (a report's HTML, its PDF's or browser's
    text), and the ``escapes`` that replaced them are there."""
    found = sorted({f"U+{ord(c):04X}" for c in text if c in BIDI_CONTROLS})
    assert not found, found
    for escape in escapes:
        assert escape in text, escape


def need(tool: str) -> str:
    """Path of an external tool; skip (or fail with CUEGAP_REQUIRE_BROWSER=1) without it."""
    path = shutil.which(tool)
    if path is None:
        message = f"{tool} is not installed (apt-get install chromium poppler-utils)"
        if REQUIRE_BROWSER:
            pytest.fail(f"CUEGAP_REQUIRE_BROWSER=1 but {message}")
        pytest.skip(message)
    return path


# --------------------------------------------------------------------------- the store


def _bank() -> dict:
    dilemmas, items = [], []
    for i in range(N_DILEMMAS):
        d = f"d{i:02d}"
        benefit = "option2" if i % 2 else "option1"
        dilemmas.append({"dilemma_id": d, "benefit_option": benefit, "person_status": "bad"})
        items.append({"item_id": f"neutral-{d}", "dilemma_id": d, "condition": "neutral"})
        items.append(
            {
                "item_id": f"direct-{d}",
                "dilemma_id": d,
                "condition": "direct",
                "individuals": PEOPLE,
            }
        )
        items.append(
            {
                "item_id": f"puzzled-{d}",
                "dilemma_id": d,
                "condition": "puzzled",
                "difficulty": "hard",
                "solution_shape": "orig",
                "individuals": PEOPLE,
            }
        )
    return {
        "format": "cuegap-itembank",
        "version": 1,
        "name": "report-bank",
        "dilemmas": dilemmas,
        "items": items,
    }


def _responses(bank: dict) -> list[dict]:
    rng = np.random.default_rng(7)
    benefit = {d["dilemma_id"]: d["benefit_option"] for d in bank["dilemmas"]}
    other = {"option1": "option2", "option2": "option1"}
    lines = []
    for system in SYSTEMS:
        for i, d in enumerate(benefit):
            # Neutral: half the dilemmas on the benefit option, so both trial kinds exist.
            neutral = benefit[d] if i % 4 < 2 else other[benefit[d]]
            lines.append(
                {"system": system, "item_id": f"neutral-{d}", "probe": "main", "response": neutral}
            )
            truth = {p["label"]: {"gender": p["gender"], "race": p["race"]} for p in PEOPLE}
            lines.append(
                {
                    "system": system,
                    "item_id": f"puzzled-{d}",
                    "probe": "main",
                    "response": json.dumps({**truth, "answer": neutral}),
                }
            )
            for p in PEOPLE:
                same = str(rng.choice(["option1", "option2"]))
                if system == "performative":
                    direct, puzzled = benefit[d], other[benefit[d]]
                else:
                    direct = puzzled = same
                if system == EVIL_SYSTEM and i == 0 and p["label"] == "A":
                    direct = puzzled = SCRIPT  # an abstention whose text is a payload
                for cond, answer in (("direct", direct), ("puzzled", puzzled)):
                    lines.append(
                        {
                            "system": system,
                            "item_id": f"{cond}-{d}",
                            "probe": "what_if",
                            "individual": p["label"],
                            "response": answer,
                        }
                    )
    # Abstained payload answers for the two plain systems come first in their What-ifs.
    lines.insert(
        0,
        {
            "system": "steady",
            "item_id": "direct-d00",
            "probe": "what_if",
            "individual": "A",
            "response": IMG + " " + REMOTE,
            "repeat": 1,
        },
    )
    lines.insert(
        0,
        {
            "system": "performative",
            "item_id": "direct-d00",
            "probe": "what_if",
            "individual": "B",
            "response": SVG,
            "repeat": 1,
        },
    )
    return lines


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite store with responses, payloads and a default-policy analysis (20 replicates)."""
    root = tmp_path_factory.mktemp("report-store")
    bank = _bank()
    (root / "bank.json").write_text(json.dumps(bank))
    lines = [json.dumps(x) for x in _responses(bank)]
    (root / "responses.jsonl").write_text("\n".join(lines) + "\n")
    payload_lines = [
        json.dumps(
            {"system": "steady", "item_id": "no-such-item", "probe": "main", "response": SCRIPT}
        ),
        # not JSON at all; with a raw response that would reorder what follows it
        f"{BIDI_RESPONSE} {SCRIPT} {REMOTE}",
    ]
    (root / "payloads.jsonl").write_text("\n".join(payload_lines) + "\n")
    db = root / "store.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    for name in ("bank.json", "responses.jsonl", "payloads.jsonl"):
        ingest_path(engine, root / name, format=None if name == "bank.json" else "generic")
    analyze(engine, AnalysisSettings(n_boot=20))
    engine.dispose()
    return db


def _copy(store: Path, tmp_path: Path):
    db = tmp_path / "copy.db"
    shutil.copy(store, db)
    return make_engine(f"sqlite:///{db}")


@pytest.fixture(scope="module")
def rendered(store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The report of the store under POLICY, as HTML and PDF files (rendered once)."""
    need_pdf()
    out = tmp_path_factory.mktemp("report-out")
    db = out / "store.db"
    shutil.copy(store, db)
    engine = make_engine(f"sqlite:///{db}")
    data = build_report(engine, analysis_id=_under_policy(engine))
    paths = write_report(data, out, now=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    engine.dispose()
    return {"data": data, "paths": paths, "html": paths["html"].read_text("utf-8"), "db": db}


# --------------------------------------------------------------------------- HTML content


class _Doc(HTMLParser):
    """Elements by tag, ids, attributes and visible text of an HTML document."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: dict[str, int] = {}
        self.ids: set[str] = set()
        self.attrs: list[tuple[str, str, str | None]] = []
        self.text: list[str] = []
        self._skip = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        for k, v in attrs:
            self.attrs.append((tag, k, v))
            if k == "id" and v:
                self.ids.add(v)
        if tag in ("style", "svg"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "svg"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)

    @property
    def body_text(self) -> str:
        return " ".join(" ".join(self.text).split())


def test_report_has_every_section_and_each_system_verdict(rendered: dict) -> None:
    doc = _Doc(rendered["html"])
    for section in (
        "cover",
        "provenance",
        "settings",
        "summary",
        "findings",
        "fig-forest",
        "fig-groupnet",
        "fig-ranks",
        "fig-asymmetry",
        "tables",
        "fig-intersection",
        "sign-tests",
        "quality",
        "quarantine",
        "appendix-methods",
        "appendix-diagnostics",
        "appendix-limitations",
        "signoff",
    ):
        assert section in doc.ids, section
    assert doc.tags.get("svg", 0) == 5  # five figures, inline
    rows = re.findall(
        r'<tr class="verdict-(\w+)">\s*<td class="system">(.*?)</td>', rendered["html"], re.S
    )
    verdict = {name: v for v, name in rows}
    assert verdict["performative"] == "flagged"
    assert verdict["steady"] == "passed"
    assert len(verdict) == 3
    text = doc.body_text
    assert "flagged for performative compliance" in text
    assert "1 are flagged" not in text and "1 is flagged for performative compliance" in text
    assert "no Bayesian fit is stored" in text  # diagnostics appendix without a fit
    assert "min_parsable = 50" in text  # the policy as applied, printed as TOML
    assert "Decision bias by gender" in text and "Decision bias by race/ethnicity" in text


def test_cover_shows_provenance_with_hashes_and_versions(rendered: dict, store: Path) -> None:
    data, text = rendered["data"], _Doc(rendered["html"]).body_text
    for run in data.provenance.runs.itertuples():
        assert run.sha256 in text and len(run.sha256) == 64
    assert data.provenance.banks["sha256"].iloc[0] in text
    assert "report-bank" in text
    for pkg in ("cuegap", "pandas", "weasyprint", "matplotlib", "jinja2", "adjustText"):
        assert re.search(rf"{pkg}\s+\d", text), pkg
    quarantine = data.provenance.quarantine
    assert quarantine["lines"].sum() == 2
    for reason in quarantine["reason"]:
        assert reason in text


def _under_policy(engine, policy: Policy = POLICY) -> int:
    """The store's newest frequentist analysis run again under ``policy``, as
    ``cuegap report --policy`` does before it renders (the report itself only reads)."""
    from cuegap.designs import get

    return get("dilemma").under_policy(
        engine, latest_analysis_id(engine, "frequentist"), policy, None
    )


def test_policy_change_reruns_the_analysis_and_reuses_it_after(store: Path, tmp_path) -> None:
    engine = _copy(store, tmp_path)
    before = latest_analysis_id(engine, "frequentist")
    first = build_report(engine, analysis_id=_under_policy(engine))
    assert first.analysis_id != before and first.policy == POLICY
    again = build_report(engine, analysis_id=_under_policy(engine))
    assert again.analysis_id == first.analysis_id  # reused, not recomputed
    default = build_report(engine, analysis_id=before)
    assert default.policy == Policy() and default.analysis_id == before
    verdicts = default.tables["verdicts"].set_index("system")["verdict"]
    assert verdicts["performative"] == "inconclusive"  # 120 decisions < default 200
    with pytest.raises(ValueError, match="is not a stored frequentist analysis"):
        build_report(engine, analysis_id=999)


def test_a_report_never_runs_an_analysis(tmp_path: Path) -> None:
    """With data but no stored analysis, the report names the command to run, and the
    store still holds no analysis afterwards."""
    from sqlalchemy import func, select

    engine = make_engine(f"sqlite:///{tmp_path / 'bare.db'}")
    upgrade(engine)
    bank = _bank()
    (tmp_path / "bank.json").write_text(json.dumps(bank))
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(x) for x in _responses(bank)))
    ingest_path(engine, tmp_path / "bank.json")
    ingest_path(engine, tmp_path / "r.jsonl", format="generic")
    with pytest.raises(ValueError, match="run cuegap analyze --design dilemma"):
        build_report(engine)
    res = CliRunner().invoke(app, ["--db", str(engine.url), "report", "-o", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert "no dilemma analysis is stored: run cuegap analyze --design dilemma" in res.output
    with engine.connect() as conn:
        assert conn.execute(select(func.count(Analysis.id))).scalar() == 0


def test_cover_shows_each_runner_mapping_as_escaped_text(store: Path, tmp_path: Path) -> None:
    """An ingest pass's recorded mapping (here written into the store as ingest records it)
    is named in the ingest-passes table and quoted once as text, even when it is markup."""
    engine = _copy(store, tmp_path)
    toml = 'runner = "openai-batch"\n# <script>alert(1)</script>\n'
    mapping = {"path": "/maps/acme.toml", "sha256": "ab" * 32, "toml": toml}
    with engine.begin() as conn:
        passes = conn.execute(update(IngestBatch).values(mapping=mapping)).rowcount
    data = build_report(engine, analysis_id=_under_policy(engine))
    html = render_html(data, now=datetime(2026, 1, 2, tzinfo=UTC)).html
    engine.dispose()
    assert passes == 2  # responses.jsonl and payloads.jsonl
    assert html.count("acme.toml · abababababab") == passes + 1  # each pass, then the quote
    assert "# &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html


def test_numbers_are_rounded_by_their_uncertainty(rendered: dict) -> None:
    """Table cells look like '12.3 ± 4.5' (SD 1-9.9 -> one decimal), never '12.34567'."""
    text = _Doc(rendered["html"]).body_text
    cells = re.findall(r"(-?\+?\d+(?:\.\d+)?) ± (\d+(?:\.\d+)?)", text)
    assert len(cells) > 50
    for value, sd in cells:
        sd_f = float(sd)
        decimals = len(sd.split(".")[1]) if "." in sd else 0
        assert (len(value.split(".")[1]) if "." in value else 0) == decimals
        if 1 <= sd_f < 9.95:
            assert decimals == 1
    assert not re.search(r"\d\.\d{4,}", text.replace(rendered["data"].data_fingerprint, ""))


# --------------------------------------------------------------------------- untrusted text


def test_payloads_are_escaped_text_not_markup(rendered: dict) -> None:
    html, doc = rendered["html"], _Doc(rendered["html"])
    assert doc.tags.get("script", 0) == 0
    assert doc.tags.get("img", 0) == 0 and doc.tags.get("iframe", 0) == 0
    assert not [a for a in doc.attrs if a[1].startswith("on")]  # no event handlers at all
    assert not [a for a in doc.attrs if a[1] in ("src", "href")]  # nothing to fetch
    text = doc.body_text
    for payload in (SCRIPT, IMG, SVG, show_bidi(EVIL_SYSTEM), 'src="https://example.com/x.png"'):
        assert payload in text, payload  # shown, as text
    assert_bidi_shown(html, escapes=("lmth.eman", "\\u202efdp.exe", "\\u2066isolated\\u2069"))
    assert "&lt;script&gt;window.__pwned=1" in html
    assert "file:///etc/passwd" in text
    assert "Content-Security-Policy" in html  # defence in depth (removed in the browser test)


def test_system_name_payload_is_escaped_inside_svg_figures(rendered: dict) -> None:
    svgs = re.findall(r"<svg.*?</svg>", rendered["html"], re.S)
    assert len(svgs) == 5
    joined = "".join(svgs)
    assert "onerror" in joined  # the name is drawn ...
    assert "<img" not in joined  # ... as escaped text
    assert "&lt;img src=x onerror=" in joined


def test_svg_ids_are_unique_across_figures(rendered: dict) -> None:
    ids = re.findall(r'\bid="([^"]+)"', rendered["html"])
    assert len(ids) == len(set(ids))


# --------------------------------------------------------------------------- no fetches


def test_fetcher_refuses_everything_outside_the_templates() -> None:
    fetcher = TemplateOnlyFetcher()
    for url in (
        "https://example.com/x.png",
        "http://localhost/x.css",
        "file:///etc/passwd",
        (TEMPLATES_DIR / ".." / ".." / "pyproject.toml").resolve().as_uri(),
        TEMPLATES_DIR.as_uri() + "/../reports/__init__.py",
        TEMPLATES_DIR.as_uri() + "/missing.css",
        "file://evil.example.com" + str(TEMPLATES_DIR / "report.css"),
        "data:text/plain,hello",
        "ftp://example.com/x",
    ):
        with pytest.raises(RefusedFetch, match="refused to fetch"):
            fetcher(url)
    assert len(fetcher.refused) == 9
    ok = fetcher((TEMPLATES_DIR / "report.css").as_uri())
    assert b"@page" in ok.read() and ok.content_type == "text/css"
    ok.close()


def test_pdf_rendering_refuses_remote_and_local_files() -> None:
    """Real WeasyPrint: unescaped references would be refused, and the render fails loudly."""
    need_pdf()
    html = '<p>x</p><img src="https://example.com/x.png"><img src="file:///etc/passwd">'
    with pytest.raises(ValueError, match="outside resources") as exc:
        render_pdf(html)
    assert "https://example.com/x.png" in str(exc.value) and "/etc/passwd" in str(exc.value)
    assert render_pdf("<p>only text</p>").startswith(b"%PDF")


# --------------------------------------------------------------------------- determinism


def test_same_store_and_policy_give_the_same_bytes_apart_from_the_time(
    rendered: dict, store: Path, tmp_path: Path
) -> None:
    engine = _copy(rendered["db"], tmp_path)
    data = build_report(engine, analysis_id=rendered["data"].analysis_id)
    a = render_html(data, now=datetime(2030, 5, 6, 7, 8, 9, tzinfo=UTC))
    b = rendered["html"]
    assert a.html != b  # the timestamps differ ...
    strip = re.compile(r'(data-cuegap="generated-at">)[^<]*')
    assert strip.sub(r"\1", a.html).encode() == strip.sub(r"\1", b).encode()  # ... only they
    assert a.content_hash == content_hash(a.html) == content_hash(b)
    assert a.content_hash in b and a.report_id in b
    assert content_hash(b.replace("performative", "performativ3")) != a.content_hash
    # at the same time, the same bytes: HTML and PDF (WeasyPrint writes no clock or random id)
    same = render_html(data, now=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert same.html == b
    assert render_pdf(same.html) == rendered["paths"]["pdf"].read_bytes()


def test_cli_report_in_another_process_has_the_same_content_hash(
    rendered: dict, tmp_path: Path
) -> None:
    db = tmp_path / "cli.db"
    shutil.copy(rendered["db"], db)
    analysis = str(rendered["data"].analysis_id)
    out = subprocess.run(
        [
            *(sys.executable, "-m", "cuegap.cli", "--db", f"sqlite:///{db}", "report"),
            *("--out", str(tmp_path / "r"), "--analysis", analysis, "--format", "html"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    html_path = tmp_path / "r" / f"cuegap-report-{analysis}.html"
    assert f"HTML report 1: {html_path}" in out.stdout  # registered as report 1
    assert not (tmp_path / "r" / f"cuegap-report-{analysis}.pdf").exists()
    assert content_hash(html_path.read_text("utf-8")) == content_hash(rendered["html"])


def test_cli_report_writes_both_formats_and_rejects_bad_input(store: Path, tmp_path) -> None:
    need_pdf()
    db = tmp_path / "cli.db"
    shutil.copy(store, db)
    policy = tmp_path / "policy.toml"
    policy.write_text("[data]\nmin_parsable = 50\n")
    runner = CliRunner()
    url = f"sqlite:///{db}"
    ok = runner.invoke(
        app, ["--db", url, "report", "--out", str(tmp_path / "o"), "--policy", str(policy)]
    )
    assert ok.exit_code == 0, ok.output
    said = re.sub(r"\s+", " ", ok.output)  # the re-run is the CLI's, printed before the report
    assert "Running the dilemma analysis of analysis 1 again under the policy in" in said
    assert "a report only shows stored analyses" in said and "Reporting analysis 2." in said
    assert "HTML report 1:" in ok.output and "PDF report 2:" in ok.output
    assert len(list((tmp_path / "o").glob("*.pdf"))) == 1
    bad = runner.invoke(app, ["--db", url, "report", "--out", str(tmp_path), "--format", "doc"])
    assert bad.exit_code == 2 and "--format should be html, pdf or both" in bad.output
    bad = runner.invoke(app, ["--db", url, "report", "--out", str(tmp_path / "audit.pdf")])
    assert bad.exit_code == 2 and "--out is the folder the report goes in" in bad.output
    assert not (tmp_path / "audit.pdf").exists()  # no folder named like a file
    bad = runner.invoke(app, ["--db", url, "report", "--out", str(tmp_path), "--analysis", "77"])
    assert bad.exit_code == 2 and "no analysis 77 in the store" in bad.output


# --------------------------------------------------------------------------- sign-off


def test_signoff_block_is_blank_or_filled_from_records(rendered: dict, store, tmp_path) -> None:
    assert 'class="blank-signoff"' in rendered["html"] and 'id="signoffs"' not in rendered["html"]
    data = rendered["data"]
    data_signed = type(data)(
        **{
            **data.__dict__,
            "signoffs": [
                {
                    "reviewer": "Ada <b>Board</b>",
                    "decision": "approve",
                    "signed_at": "2026-02-01T10:00:00+00:00",
                    "report_sha256": "ab" * 32,
                    "record_hash": "cd" * 32,
                }
            ],
        }
    )
    html = render_html(data_signed).html
    doc = _Doc(html)
    assert "signoffs" in doc.ids and 'class="blank-signoff"' not in html
    assert "Ada <b>Board</b>" in doc.body_text and "ab" * 32 in html and "cd" * 32 in html


# --------------------------------------------------------------------------- Bayesian


def _store_bayes(engine, fingerprint: str, systems: list[str], settings: dict) -> int:
    gap = [
        {
            "system": s,
            "group_type": "macro",
            "group": "macro",
            "gap_mean": 10.0 - 5 * i,
            "gap_sd": 1.2,
            "gap_q05": 8.0 - 5 * i,
            "gap_q95": 12.0 - 5 * i,
            "p_gap_pos": 1.0,
            "p_gap_gt_delta": 0.99,
            "p_abs_lt_delta": 0.0,
        }
        for i, s in enumerate(systems)
    ]
    ranks = [
        {
            "system": s,
            "ranking": r,
            "rank_median": i + 1,
            "rank_q05": 1,
            "rank_q25": i + 1,
            "rank_q75": i + 1,
            "rank_q95": len(systems),
        }
        for i, s in enumerate(systems)
        for r in ("direct", "puzzled", "gap")
    ]
    diag = [
        {
            "attempt": 1,
            "sampler": "nutpie",
            "r_hat_max": 1.004,
            "ess_bulk_min": 960.0,
            "divergences": 0,
            "passed": True,
        }
    ]
    import pandas as pd

    return save_analysis(
        engine,
        kind="bayesian",
        status="ok",
        data_fingerprint=fingerprint,
        system_fingerprints={},
        settings=settings,
        tables={
            "bayes_gap": pd.DataFrame(gap),
            "bayes_ranks": pd.DataFrame(ranks),
            "bayes_diagnostics": pd.DataFrame(diag),
        },
    )


def test_bayesian_results_are_used_when_fitted_to_the_same_data(
    rendered: dict, tmp_path: Path
) -> None:
    engine = _copy(rendered["db"], tmp_path)
    freq = rendered["data"]
    systems = sorted(freq.tables["verdicts"]["system"])
    same = {**freq.settings.to_dict(), "bayes": {"draws": 1000}}
    _store_bayes(engine, "0" * 64, systems, same)  # other data: ignored
    data = build_report(engine, analysis_id=freq.analysis_id)
    assert data.bayes is None and "fitted to other data" in data.bayes_note
    bayes_id = _store_bayes(engine, freq.data_fingerprint, systems, same)
    # same data, another question: newer fits that must not be used
    other_policy = {**same, "policy": {**same["policy"], "delta_pp": 5.0}}
    other_pair = {**same, "implicit": ["puzzled", "easy"], "consequences": False}
    for other in (other_policy, other_pair):
        _store_bayes(engine, freq.data_fingerprint, systems, other)
    data = build_report(engine, analysis_id=freq.analysis_id)
    assert data.bayes is not None and data.bayes.analysis_id == bayes_id
    # without a fit of this question, the report says why the newest is not used
    with engine.begin() as conn:
        conn.execute(delete(AnalysisTable).where(AnalysisTable.analysis_id == bayes_id))
        conn.execute(delete(Analysis).where(Analysis.id == bayes_id))
    alone = build_report(engine, analysis_id=freq.analysis_id)
    assert alone.bayes is None
    assert "it compared direct vs puzzled-easy" in alone.bayes_note
    assert "it used the other consequences setting" in alone.bayes_note
    assert "run `cuegap analyze --bayes` with this report's settings" in alone.bayes_note
    html = render_html(data).html
    doc = _Doc(html)
    assert "diagnostics" in doc.ids
    text = doc.body_text
    assert "nutpie" in text and "Bayesian analysis" in text and "converged" in text
    assert "Bayesian gap, pp [90% CrI]" in text
    assert "+10.0 [+8.0, +12.0]" in text  # SD 1.2 -> one decimal
    assert "1 [1, 3] → 1 [1, 3]" in text  # rank with its 90% interval
    assert "90% posterior rank intervals" in text


# --------------------------------------------------------------------------- PDF (poppler)


def test_pdf_pages_text_and_page_images(rendered: dict, tmp_path: Path) -> None:
    pdftotext, pdfinfo, pdftoppm = need("pdftotext"), need("pdfinfo"), need("pdftoppm")
    pdf = rendered["paths"]["pdf"]
    info = subprocess.run([pdfinfo, str(pdf)], capture_output=True, text=True, check=True)
    pages = int(re.search(r"Pages:\s+(\d+)", info.stdout).group(1))
    assert 6 <= pages <= 30
    text = subprocess.run(
        [pdftotext, "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    for needle in (
        "Cue Visibility Gap audit report",
        "Executive summary",
        "flagged for performative compliance",
        "passed",
        "performative",
        "steady",
        "Decision bias by gender",
        "Data quality",
        "Appendix B. Diagnostics",
        "Sign-off",
        "window.__pwned=1",  # the payload, as printed text
        rendered["data"].data_fingerprint[:20],
    ):
        assert needle in text, needle
    assert_bidi_shown(text)
    subprocess.run(
        [pdftoppm, "-r", "40", "-png", "-f", "1", "-l", "4", str(pdf), str(tmp_path / "page")],
        check=True,
    )
    images = sorted(tmp_path.glob("page-*.png"))
    assert len(images) == 4
    for img in images:
        data = img.read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5_000


# --------------------------------------------------------------------------- browser


def _chromium(*args: str) -> subprocess.CompletedProcess:
    exe = need("chromium")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    return subprocess.run(
        [exe, *flags, "--virtual-time-budget=3000", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _dom(page: Path) -> str:
    out = _chromium("--dump-dom", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_chromium_runs_none_of_the_payloads_and_shows_them_as_text(
    rendered: dict, tmp_path: Path
) -> None:
    # Remove the Content-Security-Policy: escaping alone must keep the payloads inert.
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", rendered["html"])
    assert "Content-Security-Policy" not in html
    page = tmp_path / "report.html"
    page.write_text(html, "utf-8")
    dom = _dom(page)
    assert "Executive summary" in dom
    html_tag = re.search(r"<html[^>]*>", dom).group(0)
    assert "data-pwned" not in html_tag
    assert "&lt;script&gt;window.__pwned=1" in dom  # rendered as text
    assert "&lt;img src=x onerror=" in dom
    assert not re.search(r"<(script|img|iframe)\b", dom)
    assert_bidi_shown(dom)
    shot = tmp_path / "report.png"
    out = _chromium(f"--screenshot={shot}", "--window-size=1280,3000", page.as_uri())
    assert out.returncode == 0, out.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000


def test_chromium_would_run_an_unescaped_payload(tmp_path: Path) -> None:
    """Control: the detector works; the same payloads, unescaped, do run."""
    page = tmp_path / "control.html"
    page.write_text(f"<!DOCTYPE html><html><body><p>x</p>{IMG}</body></html>", "utf-8")
    html_tag = re.search(r"<html[^>]*>", _dom(page)).group(0)
    assert "data-pwned" in html_tag
