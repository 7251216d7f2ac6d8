"""Tests of the simulator: design, file formats, determinism and recovery of planted rates."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import jsonschema
import pytest

import cuegap
from cuegap.designs.dilemma.simulate import (
    SimulationResult,
    placeholder_names,
    simulate,
    synthetic_item_bank,
)
from cuegap.designs.dilemma.simulate import _text as tx

SCHEMAS = Path(__file__).resolve().parents[1] / "cuegap/ingest/schemas"
ITEMBANK_SCHEMA = json.loads((SCHEMAS / "itembank-v1.schema.json").read_text(encoding="utf-8"))
RESPONSES_VALIDATOR = jsonschema.Draft202012Validator(
    json.loads((SCHEMAS / "responses-v1.schema.json").read_text(encoding="utf-8"))
)
PER_SYSTEM_PAPER = 21_800
OPTION_RE = re.compile(r"option\s*([12])", re.IGNORECASE)
DIRECT_MAIN_RE = re.compile(r"^([A-Za-z])\s*-\s*option\s*([12])\.?$", re.IGNORECASE)


# ---------------------------------------------------------------- helpers


def parse_option(text: str) -> int | None:
    """0/1 for option1/option2, None for refusals, junk and ambiguous answers."""
    found = set(OPTION_RE.findall(text))
    return int(found.pop()) - 1 if len(found) == 1 else None


def parse_yes_no(text: str) -> bool | None:
    t = text.strip("*").lower()
    if t.startswith("yes"):
        return True
    if t.startswith("no"):
        return False
    return None


def parse_json_answer(text: str) -> dict | None:
    start = text.find("{")
    if start < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError:
        return None
    return obj


def read_lines(path: Path) -> tuple[dict, list[dict]]:
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    rows = [json.loads(line) for line in lines[:-1]]
    return rows[0], rows[1:]


def empirical_pooled(bank: dict, rows: list[dict]) -> dict:
    """Favor/against counts per (system, condition, difficulty, consequences)."""
    items = {it["item_id"]: it for it in bank["items"]}
    benefit = {d["dilemma_id"]: int(d["benefit_option"] == "option2") for d in bank["dilemmas"]}
    s_d: dict[tuple, int] = {}
    for r in rows:
        it = items[r["item_id"]]
        if it["condition"] == "neutral":
            s_d[(r["system"], r["consequences"], it["dilemma_id"])] = parse_option(r["response"])
    out: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in rows:
        if r["probe"] != "what_if":
            continue
        it = items[r["item_id"]]
        w = parse_option(r["response"])
        if w is None:
            continue
        s = s_d[(r["system"], r["consequences"], it["dilemma_id"])]
        b = benefit[it["dilemma_id"]]
        cell = out[(r["system"], it["condition"], it.get("difficulty"), r["consequences"])]
        if s != b:
            cell[0] += w == b
            cell[1] += 1
        else:
            cell[2] += w != b
            cell[3] += 1
    return out


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[SimulationResult, dict]:
    bank = synthetic_item_bank(seed=5, n_dilemmas=10, named=True, name="small")
    res = simulate(tmp_path_factory.mktemp("small"), systems=3, seed=5, item_bank=bank)
    return res, bank


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> tuple[SimulationResult, dict, dict, list[dict]]:
    bank = synthetic_item_bank(seed=11)
    res = simulate(tmp_path_factory.mktemp("full"), systems=3, seed=11, item_bank=bank)
    header, rows = read_lines(res.responses_path)
    return res, bank, header, rows


# ---------------------------------------------------------------- item bank


def test_synthetic_bank_design():
    bank = synthetic_item_bank()
    jsonschema.validate(bank, ITEMBANK_SCHEMA)
    assert [d["dilemma_id"] for d in bank["dilemmas"]] == [str(i) for i in range(1, 101)]
    assert Counter(it["condition"] for it in bank["items"]) == {
        "neutral": 100,
        "direct": 300,
        "puzzled": 900,
    }
    puzzled = [it for it in bank["items"] if it["condition"] == "puzzled"]
    assert Counter(it["difficulty"] for it in puzzled) == {
        "easy": 300,
        "intermediate": 300,
        "hard": 300,
    }
    per_puzzle = Counter((it["puzzle_id"], it["difficulty"]) for it in puzzled)
    assert len(per_puzzle) == 60 and set(per_puzzle.values()) == {15}
    dilemmas_per_puzzle = defaultdict(set)
    for it in puzzled:
        dilemmas_per_puzzle[it["puzzle_id"]].add(it["dilemma_id"])
    assert {len(v) for v in dilemmas_per_puzzle.values()} == {5}
    assert Counter(d["person_status"] for d in bank["dilemmas"]) == {
        "bad": 64,
        "neutral": 34,
        "good": 2,
    }
    agree = [
        a["benefit_option"] == d["benefit_option"]
        for d in bank["dilemmas"]
        for a in d["annotations"]
    ]
    assert 0.88 < sum(agree) / len(agree) < 1.0
    direct = [it for it in bank["items"] if it["condition"] == "direct"]
    inds = [x for it in direct for x in it["individuals"]]
    assert set(Counter(x["gender"] for x in inds).values()) == {400}
    assert set(Counter(x["race"] for x in inds).values()) == {240}
    for d in {it["dilemma_id"] for it in direct}:
        combos = [
            tuple((x["gender"], x["race"]) for x in it["individuals"])
            for it in direct
            if it["dilemma_id"] == d
        ]
        assert len(set(combos)) == 3
    for it in direct + puzzled:
        a, b, c, d = it["individuals"]
        assert a["gender"] == b["gender"] != c["gender"] == d["gender"]
        assert a["race"] == c["race"] != b["race"] == d["race"]
    assert synthetic_item_bank() == bank
    assert synthetic_item_bank(seed=1) != bank


def test_synthetic_bank_named():
    bank = synthetic_item_bank(n_dilemmas=20, named=True)
    jsonschema.validate(bank, ITEMBANK_SCHEMA)
    counts = Counter(it["condition"] for it in bank["items"])
    assert counts["named"] == counts["formal_named"] == counts["direct"] == 60
    for it in bank["items"]:
        if it["condition"] not in ("named", "formal_named"):
            continue
        for ind in it["individuals"]:
            assert ind["name"] in placeholder_names(ind["race"], ind["gender"])
        if it["condition"] == "formal_named":
            assert it["difficulty"] == "hard" and it["solution_shape"] == "orig"
            sols = [(x["solution"]["number"], x["solution"]["letter"]) for x in it["individuals"]]
            assert sols == [("1", "A"), ("1", "B"), ("2", "A"), ("2", "B")]


# ---------------------------------------------------------------- small simulation


def test_small_files_valid(small):
    res, bank = small
    stored = json.loads(res.itembank_path.read_text(encoding="utf-8"))
    assert stored == bank
    header, rows = read_lines(res.responses_path)
    for obj in [header, *rows]:
        RESPONSES_VALIDATOR.validate(obj)
    assert header["format"] == "cuegap-responses" and header["version"] == 1
    assert header["item_bank"] == "small" == res.item_bank_name
    assert header["runner"] == "cuegap-simulate"
    assert header["runner_version"] == cuegap.__version__
    assert header["settings"] == {"temperature": 0, "seed": 5}
    assert list(header["systems"]) == ["sim-system-01", "sim-system-02", "sim-system-03"]
    for meta in header["systems"].values():
        assert meta["provider"] == "simulated"
        assert meta["metadata"]["alignment"] in (1, 2, 3)
        assert 0 <= meta["metadata"]["capability"] <= 1
    item_ids = {it["item_id"] for it in bank["items"]}
    assert all(r["item_id"] in item_ids for r in rows)
    assert len({r["sample_id"] for r in rows}) == len(rows) == res.n_responses
    for r in rows:
        assert ("individual" in r) == (r["probe"] != "main")
    # 10 neutral + 30 items x 9 probes for direct, named, formal_named and 90 puzzled, x 2
    per_system = 2 * (10 + 9 * (30 + 90 + 30 + 30))
    assert Counter(r["system"] for r in rows) == {f"sim-system-0{i}": per_system for i in (1, 2, 3)}
    assert Counter(r["consequences"] for r in rows) == {
        True: 3 * per_system // 2,
        False: 3 * per_system // 2,
    }


def test_small_text_forms(small):
    res, bank = small
    _, rows = read_lines(res.responses_path)
    conditions = {it["item_id"]: it["condition"] for it in bank["items"]}
    options = {t for pair in tx.OPTION_TEXT for t in pair}
    abstain = set(tx.ABSTAIN_TEXT)
    yes_no = {t for t, _ in tx.NO_FORMS} | {
        t.format(label=lab) for t, _ in tx.YES_FORMS for lab in "ABCD"
    }
    for r in rows:
        text, cond = r["response"], conditions[r["item_id"]]
        if r["probe"] == "what_if" or cond == "neutral":
            assert text in options | abstain
        elif r["probe"] == "could_be":
            assert text in yes_no | abstain
            assert (parse_yes_no(text) is None) == (text in abstain)
            if text.startswith("Yes,"):
                assert f"individual {r['individual']} " in text
        elif cond in ("direct", "named"):
            assert text in abstain or DIRECT_MAIN_RE.match(text)
        else:
            assert parse_json_answer(text) is not None or text in abstain or text.startswith('{"A"')


def test_determinism(small, tmp_path):
    res, bank = small
    again = simulate(tmp_path / "a", systems=3, seed=5, item_bank=bank)
    for name in ("itembank.json", "responses.jsonl", "truth.json"):
        assert (res.out_dir / name).read_bytes() == (again.out_dir / name).read_bytes()
    other = simulate(tmp_path / "b", systems=3, seed=6, item_bank=bank)
    assert other.responses_path.read_bytes() != res.responses_path.read_bytes()
    assert other.truth_path.read_bytes() != res.truth_path.read_bytes()


def test_truth_consistency(small):
    res, bank = small
    truth = json.loads(res.truth_path.read_text(encoding="utf-8"))
    assert truth["seed"] == 5 and truth["item_bank"] == "small"
    assert truth["design"]["n_responses"] == res.n_responses
    assert truth["design"]["n_items"]["formal_named:hard"] == 30
    pairs: Counter = Counter()
    for it in bank["items"]:
        for x in it.get("individuals", []):
            for gtype in ("gender", "race"):
                pairs[(it["condition"], it.get("difficulty"), gtype, x[gtype])] += 1
    seen = Counter()
    for rec in truth["rates"]:
        for key in ("favor_rate", "against_rate"):
            assert rec[key] is None or 0.0 <= rec[key] <= 1.0
        assert (rec["favor_rate"] is None) == (rec["favor_n"] == 0)
        key = (rec["condition"], rec["difficulty"], rec["group_type"], rec["group"])
        assert rec["favor_n"] + rec["against_n"] == pairs[key]
        seen[key] += 1
    assert set(seen) == set(pairs) and set(seen.values()) == {3 * 2}
    for rec in truth["pooled_rates"]:
        n = sum(
            v for k, v in pairs.items() if k[:3] == (rec["condition"], rec["difficulty"], "race")
        )
        assert rec["favor_n"] + rec["against_n"] == n
    assert all(0.0 <= r["yes_rate"] <= 1.0 for r in truth["could_be_rates"])
    assert [s["system"] for s in truth["systems"]] == [
        "sim-system-01",
        "sim-system-02",
        "sim-system-03",
    ]
    assert [s["high_abstention"] for s in truth["systems"]] == [False, False, True]
    for s in truth["systems"]:
        assert 0.25 <= s["p_benefit"] <= 0.5
        assert set(s["favor"]["gender"]) == set(truth["design"]["n_items"])
        assert abs(sum(s["against"]["race"]["direct"].values())) < 1e-6
    # neutral decisions in the truth are the ones written
    _, rows = read_lines(res.responses_path)
    written = {
        (r["system"], r["consequences"], r["item_id"].split("-", 1)[1]): parse_option(r["response"])
        for r in rows
        if r["item_id"].startswith("neutral-")
    }
    for rec in truth["neutral_decisions"]:
        for did, opt in rec["decisions"].items():
            assert written[(rec["system"], rec["consequences"], did)] == int(opt[-1]) - 1


def test_progress_and_result(tmp_path):
    calls = []
    bank = synthetic_item_bank(n_dilemmas=5)
    res = simulate(
        tmp_path, systems=2, seed=1, item_bank=bank, progress=lambda i, n: calls.append((i, n))
    )
    assert calls == [(1, 2), (2, 2)]
    assert res.n_systems == 2 and res.out_dir == tmp_path
    assert res.n_responses == 2 * 2 * (5 + 9 * 15 + 9 * 45)


def test_unsupported_condition(tmp_path):
    bank = synthetic_item_bank(n_dilemmas=2)
    bank["items"][-1]["condition"] = "explicit"
    with pytest.raises(ValueError, match="explicit"):
        simulate(tmp_path, systems=1, item_bank=bank)


def test_without_real_data(monkeypatch, tmp_path):
    monkeypatch.setenv("CUEGAP_MORAL_SAFETY_DIR", str(tmp_path / "missing"))
    res = simulate(tmp_path / "out", systems=1, seed=3)
    assert res.item_bank_name == "cuegap-synthetic"
    assert res.n_responses == PER_SYSTEM_PAPER
    named = simulate(tmp_path / "named", systems=1, seed=3, named=True)
    stored = json.loads(named.itembank_path.read_text(encoding="utf-8"))
    assert stored == synthetic_item_bank(seed=3, named=True)


def test_real_design_when_available(tmp_path):
    from cuegap.ingest.moral_safety import find_moral_safety_dir

    directory = find_moral_safety_dir()
    if directory is None or not directory.is_dir():
        pytest.skip("Moral Safety CSVs not found")
    res = simulate(tmp_path, systems=1, seed=2)
    assert res.item_bank_name == "moral_safety"
    assert res.n_responses == PER_SYSTEM_PAPER


# ---------------------------------------------------------------- full paper scale


def test_full_counts_and_sampled_schema(full):
    res, bank, header, rows = full
    assert res.n_responses == len(rows) == 3 * PER_SYSTEM_PAPER
    assert set(Counter(r["system"] for r in rows).values()) == {PER_SYSTEM_PAPER}
    RESPONSES_VALIDATOR.validate(header)
    for r in rows[::97]:
        RESPONSES_VALIDATOR.validate(r)
    item_ids = {it["item_id"] for it in bank["items"]}
    assert {r["item_id"] for r in rows} == item_ids


def test_full_recovers_planted_rates(full):
    res, bank, _, rows = full
    truth = json.loads(res.truth_path.read_text(encoding="utf-8"))
    empirical = empirical_pooled(bank, rows)
    assert len(truth["pooled_rates"]) == 3 * 4 * 2
    for rec in truth["pooled_rates"]:
        key = (rec["system"], rec["condition"], rec["difficulty"], rec["consequences"])
        fav, n_fav, ag, n_ag = empirical[key]
        for hits, n, p in ((fav, n_fav, rec["favor_rate"]), (ag, n_ag, rec["against_rate"])):
            assert n > 20, key
            se = math.sqrt(p * (1 - p) / n)
            assert abs(hits / n - p) <= 4 * se + 1e-9, (key, hits / n, p)


def test_full_abstention_and_puzzles(full):
    res, bank, _, rows = full
    truth = json.loads(res.truth_path.read_text(encoding="utf-8"))
    items = {it["item_id"]: it for it in bank["items"]}
    abst, total = Counter(), Counter()
    wrong, json_mains, unparsable = Counter(), Counter(), Counter()
    for r in rows:
        it = items[r["item_id"]]
        if r["probe"] == "what_if" and it["condition"] == "direct":
            total[r["system"]] += 1
            abst[r["system"]] += parse_option(r["response"]) is None
        if r["probe"] == "main" and it["condition"] == "puzzled":
            key = (r["system"], it["difficulty"])
            json_mains[key] += 1
            obj = parse_json_answer(r["response"])
            if obj is None:
                unparsable[key] += 1
                continue
            expected = {
                x["label"]: {"gender": x["gender"], "race": x["race"]} for x in it["individuals"]
            }
            wrong[key] += any(obj[lab] != sol for lab, sol in expected.items())
    rates = {s: abst[s] / total[s] for s in total}
    assert rates["sim-system-03"] >= 0.8
    assert rates["sim-system-01"] < 0.1 and rates["sim-system-02"] < 0.1
    for key, n in json_mains.items():
        recs = [
            r
            for r in truth["realised"]
            if r["condition"] == "puzzled" and (r["system"], r["difficulty"]) == key
        ]
        assert len(recs) == 2  # one per consequences setting
        assert wrong[key] == sum(r["recovery_errors"] for r in recs)
        assert unparsable[key] == sum(r["main_unparsable"] for r in recs)
        assert unparsable[key] / n < 0.05
        assert wrong[key] / n < 0.2
