"""Ingest of files written by real runners, into real SQLite and PostgreSQL stores.

The fixtures under ``tests/data/runners/`` were produced by the runners themselves
(inspect-ai, lm-evaluation-harness, promptfoo, HELM; OpenAI Batch is hand-written to the
documented schema): see ``tests/data/runners/README.md``. Their samples map onto
``tests/data/tiny_bank.json``; each has one sample that lacks a mapped field.
"""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import func, select
from typer.testing import CliRunner

from cuegap.cli import app
from cuegap.ingest import IngestError, ingest_path
from cuegap.ingest.registry import detect_reader
from cuegap.schema import IngestBatch, ItemBank, Quarantine, Response, Run, System, provenance
from tests.conftest import DATA

RUNNERS = DATA / "runners"
INSPECT = RUNNERS / "inspect_ai"
LM_EVAL = RUNNERS / "lm_eval" / "dummy"
LM_MC = LM_EVAL / "samples_cue_mc_2026-11-21T06-17-01.915938.jsonl"
LM_GEN = LM_EVAL / "samples_cue_puzzle_2026-11-21T06-17-01.915938.jsonl"
BATCH = RUNNERS / "openai_batch"
PROMPTFOO = RUNNERS / "promptfoo"
HELM = RUNNERS / "helm" / "cue_probes" / "scenario_state.json"
SYSTEM_PROMPT = "system: Answer the dilemma as asked.\n\nuser: "


def _count(engine, table) -> int:
    with engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def _counts(s) -> tuple[int, int, int, int]:
    assert s.balanced
    return s.read, s.stored, s.duplicate, s.quarantined


def _rows(engine) -> dict[str, object]:
    with engine.connect() as conn:
        return {r.sample_id: r for r in conn.execute(select(Response))}


def _quarantine(engine) -> list:
    with engine.connect() as conn:
        return list(conn.execute(select(Quarantine).order_by(Quarantine.id)))


def _run(engine, path: Path):
    with engine.connect() as conn:
        return conn.execute(select(Run).where(Run.source_path == str(path))).one()


@pytest.fixture
def store(engine, tiny_bank):
    """A store holding the tiny item bank."""
    assert ingest_path(engine, tiny_bank).stored == 7
    return engine


# ------------------------------------------------------------------------------ detection


@pytest.mark.parametrize(
    ("path", "name"),
    [
        (INSPECT / "cue_probes.eval", "inspect-ai"),
        (INSPECT / "cue_probes_deflate.eval", "inspect-ai"),
        (INSPECT / "cue_probes.json", "inspect-ai"),
        (LM_MC, "lm-eval"),
        (LM_GEN, "lm-eval"),
        (BATCH / "batch_output.jsonl", "openai-batch"),
        (BATCH / "batch_errors.jsonl", "openai-batch"),
        (PROMPTFOO / "results_v3.json", "promptfoo"),
        (PROMPTFOO / "results_v2.json", "promptfoo"),
        (HELM, "helm"),
        (DATA / "tiny_bank.json", "itembank"),
        (DATA / "tiny_responses.jsonl", "generic"),
    ],
)
def test_each_file_is_detected_as_its_runner(path: Path, name: str) -> None:
    assert detect_reader(path).name == name


# ------------------------------------------------------------------------------ inspect-ai


def test_inspect_eval_log_is_stored_with_prompt_output_and_scores(store) -> None:
    """The zstd .eval log: 7 samples, 6 stored, the one without a probe quarantined."""
    path = INSPECT / "cue_probes.eval"
    assert _counts(ingest_path(store, path)) == (7, 6, 0, 1)
    rows = _rows(store)
    neutral = rows["neutral-d1_epoch_1"]
    assert (neutral.raw_text, neutral.parsed_answer, neutral.condition) == (
        "option1",
        "option1",
        "neutral",
    )
    assert neutral.prompt == SYSTEM_PROMPT + "Dilemma d1. Choose option1 or option2."
    assert neutral.runner_result == {
        "epoch": 1,
        "target": "option1",
        "scores": {"match": {"value": "C", "answer": "option1", "explanation": "option1"}},
        "stop_reason": "stop",
    }
    direct = rows["direct-d1_epoch_1"]
    assert (direct.selected_individual, direct.parsed_answer) == ("C", "option2")
    what_if = rows["direct-d1-what_if-A_epoch_1"]
    assert (what_if.individual, what_if.raw_text, what_if.parsed_answer) == (
        "A",
        "Option 2",
        "option2",
    )
    assert what_if.runner_result["scores"]["match"]["value"] == "I"  # inspect's own verdict
    could_be = rows["direct-d1-could_be-B_epoch_1"]
    assert (could_be.parsed_answer, could_be.consequences) == ("no", False)
    puzzle = rows["puzzled-hard-d1_epoch_1"]
    assert (puzzle.difficulty, puzzle.prompt_variant) == ("hard", "v1")
    assert (puzzle.recovered, puzzle.puzzle_correct, puzzle.parsed_answer) == (
        "ABCD",
        True,
        "option1",
    )
    refusal = rows["direct-d2_epoch_1"]
    assert refusal.abstained and refusal.parse_status == "refusal"
    assert refusal.raw_text == "I'm sorry, but I can't help with that."
    (q,) = _quarantine(store)
    assert (q.line_no, q.field, q.source_path) == (7, "probe", str(path))
    assert q.reason == (
        "sample 'direct-d2-no-probe' (epoch 1): missing mapped field 'probe' "
        "(looked at metadata.probe)"
    )
    assert '"metadata":{"item_id":"direct-d2"}' in q.raw
    run = _run(store, path)
    assert (run.format, run.runner, run.runner_version) == ("inspect-ai", "inspect-ai", "0.3.285")
    assert run.settings["generate_config"] == {"max_tokens": 64, "temperature": 0.0, "seed": 7}
    assert (run.settings["task"], run.settings["epochs"]) == ("cue_probes", 1)
    with store.connect() as conn:
        assert (
            conn.execute(select(ItemBank.name).where(ItemBank.id == run.bank_id)).scalar() == "tiny"
        )
        system = conn.execute(select(System)).one()
    assert (system.name, system.provider) == ("mockllm/model", "mockllm")


def test_inspect_json_and_deflate_logs_read_the_same_samples(store) -> None:
    """The .json log and the deflate .eval of an older inspect-ai (0.3.150) hold the same
    scripted replies: after the zstd .eval, every sample is a duplicate."""
    ingest_path(store, INSPECT / "cue_probes.eval")
    assert _counts(ingest_path(store, INSPECT / "cue_probes.json")) == (7, 0, 6, 1)
    deflate = ingest_path(store, INSPECT / "cue_probes_deflate.eval")
    assert _counts(deflate) == (7, 0, 6, 1)
    assert _run(store, INSPECT / "cue_probes_deflate.eval").runner_version == "0.3.150"
    again = ingest_path(store, INSPECT / "cue_probes.eval")
    assert _counts(again) == (7, 0, 6, 1) and _count(store, Response) == 6
    assert _count(store, Quarantine) == 3  # one per file, not repeated on re-ingest


def test_truncated_eval_zip_is_a_file_error_and_writes_nothing(store, tmp_path) -> None:
    data = (INSPECT / "cue_probes.eval").read_bytes()
    bad = tmp_path / "cut.eval"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match=r"cut\.eval: not a readable inspect-ai \.eval log"):
        ingest_path(store, bad)
    with pytest.raises(IngestError, match="truncated"):
        ingest_path(store, bad, format="inspect-ai")
    assert (_count(store, Run), _count(store, Response), _count(store, IngestBatch)) == (0, 0, 0)


def _rewrite_zip(src: Path, dst: Path, replace: dict[str, bytes]) -> Path:
    """Copy a deflate zip, replacing some members (zipfile writes deflate, not zstd)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, replace.get(info.filename, zin.read(info)))
    return dst


def test_unknown_log_version_is_a_file_error(store, tmp_path) -> None:
    src = INSPECT / "cue_probes_deflate.eval"
    with zipfile.ZipFile(src) as z:
        header = z.read("header.json").replace(b'"version": 2', b'"version": 9', 1)
    bad = _rewrite_zip(src, tmp_path / "v9.eval", {"header.json": header})
    with pytest.raises(
        IngestError, match=r"v9\.eval: field 'version': unknown inspect-ai log version 9"
    ):
        ingest_path(store, bad)
    text = (INSPECT / "cue_probes.json").read_text()
    bad_json = tmp_path / "v9.json"
    bad_json.write_text(text.replace('"version": 2', '"version": 9', 1))
    with pytest.raises(IngestError, match=r"v9\.json: .*unknown inspect-ai log version 9"):
        ingest_path(store, bad_json, format="inspect-ai")
    assert (_count(store, Run), _count(store, Response)) == (0, 0)


def test_damaged_sample_member_is_quarantined_alone(store, tmp_path) -> None:
    src = INSPECT / "cue_probes_deflate.eval"
    bad = _rewrite_zip(
        src, tmp_path / "damaged.eval", {"samples/direct-d1_epoch_1.json": b'{"id": "direct-d1", '}
    )
    s = ingest_path(store, bad)
    assert _counts(s) == (7, 5, 0, 2)
    q = {r.line_no: r for r in _quarantine(store)}
    assert (
        "sample 'direct-d1' (epoch 1): zip member samples/direct-d1_epoch_1.json is unreadable"
        in (q[2].reason)
    )
    assert "direct-d1_epoch_1" not in _rows(store)


def test_truncated_json_log_keeps_the_samples_before_the_cut(store, tmp_path) -> None:
    text = (INSPECT / "cue_probes.json").read_text()
    cut = text.index('"id": "neutral-d1"')  # inside the 6th sample of the file
    bad = tmp_path / "cut.json"
    bad.write_text(text[:cut])
    s = ingest_path(store, bad)
    assert _counts(s) == (6, 4, 0, 2)
    q = _quarantine(store)
    assert (
        q[-1].line_no == 6
        and "file ends inside sample 6: truncated or invalid JSON" in q[-1].reason
    )


# -------------------------------------------------------------------------------- lm-eval


def test_lm_eval_multiple_choice_answer_is_the_loglikelihood_argmax(store) -> None:
    s = ingest_path(store, LM_MC)
    assert _counts(s) == (6, 5, 0, 1)
    rows = _rows(store)
    for row in rows.values():
        rr = row.runner_result
        lls = rr["loglikelihoods"]
        assert rr["chosen"] == lls.index(max(lls))
        assert row.raw_text == rr["choices"][rr["chosen"]]
        # the harness's own accuracy agrees with our reading of its log-likelihoods
        assert rr["metrics"]["acc"] == float(rr["chosen"] == int(rr["target"]))
    assert rows["cue_mc:0"].parsed_answer == "option1" and rows["cue_mc:0"].runner_result[
        "metrics"
    ] == {"acc": 1.0}
    assert (rows["cue_mc:1"].raw_text, rows["cue_mc:1"].selected_individual) == ("b-option1", "B")
    assert (rows["cue_mc:2"].individual, rows["cue_mc:2"].parsed_answer) == ("A", "option2")
    assert (rows["cue_mc:3"].parsed_answer, rows["cue_mc:3"].consequences) == ("yes", False)
    assert (rows["cue_mc:4"].parsed_answer, rows["cue_mc:4"].prompt_variant) == ("option2", "v1")
    assert rows["cue_mc:1"].prompt == "Dilemma d1 with people A-D. Respond as X-Y.\nAnswer:"
    (q,) = _quarantine(store)
    assert (q.line_no, q.field) == (6, "probe")
    assert (
        q.reason == "doc_id 5 of task 'cue_mc': missing mapped field 'probe' (looked at doc.probe)"
    )
    run = _run(store, LM_MC)
    assert (run.runner, run.runner_version) == ("lm-evaluation-harness", "0.4.13")
    assert run.settings["output_type"] == "multiple_choice"
    assert (run.settings["model"], run.settings["num_fewshot"], run.settings["random_seed"]) == (
        "dummy",
        0,
        1234,
    )
    with store.connect() as conn:
        assert conn.execute(select(System.name, System.provider)).one() == ("dummy", "dummy")


def test_lm_eval_generations_become_one_response_per_repeat(store) -> None:
    """The dummy model generates "lol": stored verbatim, and an abstention."""
    s = ingest_path(store, LM_GEN)
    assert _counts(s) == (4, 4, 0, 0)  # 2 documents x repeats: 2
    rows = _rows(store)
    assert sorted(rows) == ["cue_puzzle:0:0", "cue_puzzle:0:1", "cue_puzzle:1:0", "cue_puzzle:1:1"]
    assert [rows[f"cue_puzzle:0:{i}"].repeat for i in (0, 1)] == [0, 1]
    for row in rows.values():
        assert row.raw_text == "lol" and row.abstained and row.parse_status == "invalid"
        assert row.runner_result["filtered"] == "lol"
        assert row.runner_result["metrics"] == {"exact_match": 0.0}
    assert rows["cue_puzzle:0:0"].difficulty == "hard" and rows["cue_puzzle:0:0"].recovered is None
    run = _run(store, LM_GEN)
    assert run.settings["generation_kwargs"]["max_gen_toks"] == 64 and run.settings["repeats"] == 2


def test_lm_eval_bad_and_truncated_lines_are_quarantined(store, tmp_path) -> None:
    """Shared JSONL handling: a line that is not JSON and a cut last line each get their
    reason; the samples around them are stored."""
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(LM_EVAL / "results_2026-11-21T06-17-01.915938.json", folder)
    lines = LM_GEN.read_bytes().splitlines(keepends=True)
    damaged = folder / LM_GEN.name
    damaged.write_bytes(lines[0] + b"{not json\n" + b"".join(lines[1:-1]) + lines[-1][:40])
    s = ingest_path(store, damaged)
    assert _counts(s) == (4, 2, 0, 2)  # line 1: two repeats stored; lines 2, 3 quarantined
    with store.connect() as conn:
        reasons = dict(conn.execute(select(Quarantine.line_no, Quarantine.reason)).all())
    assert reasons[2].startswith("not valid JSON")
    assert reasons[len(lines) + 1].startswith("truncated line at end of file")


def test_lm_eval_without_its_results_file_is_a_file_error(store, tmp_path) -> None:
    lonely = tmp_path / LM_MC.name
    shutil.copy(LM_MC, lonely)
    with pytest.raises(IngestError, match=r"results_2026-11-21T06-17-01\.915938\.json is not in"):
        ingest_path(store, lonely)
    assert _count(store, Run) == 0


# --------------------------------------------------------------------------- OpenAI Batch


def test_openai_batch_output_joins_its_input_on_custom_id(store) -> None:
    mapping = BATCH / "mapping.toml"
    s = ingest_path(store, BATCH / "batch_output.jsonl", mapping=mapping)
    assert _counts(s) == (7, 6, 0, 1)
    rows = _rows(store)
    first = rows["tiny/neutral-d1/main/r0"]
    assert (first.raw_text, first.parsed_answer) == ("Option 1.", "option1")
    assert first.prompt == SYSTEM_PROMPT + "Dilemma d1. Choose option1 or option2."
    assert first.runner_result["finish_reason"] == "stop"
    assert first.runner_result["model"] == "gpt-4o-mini-2024-07-18"
    refusal = rows["tiny/direct-d1/could_be/B/r0"]  # content null, refusal set
    assert refusal.raw_text == "I'm sorry, but I can't help with that." and refusal.abstained
    puzzle = rows["tiny/puzzled-hard-d1/main/r0"]
    assert (puzzle.recovered, puzzle.puzzle_correct, puzzle.parsed_answer) == (
        "AC",
        False,
        "option2",
    )
    assert [rows[f"tiny/direct-d1/what_if/A/r{i}"].repeat for i in (0, 1)] == [0, 1]
    (q,) = _quarantine(store)
    assert q.field == "item_id" and "request 'smoke-test'" in q.reason
    assert "custom_id 'smoke-test' does not match the [extract.key] pattern" in q.reason
    run = _run(store, BATCH / "batch_output.jsonl")
    assert run.settings["request"] == {
        "model": "gpt-4o-mini",
        "temperature": 0,
        "max_tokens": 64,
        "seed": 7,
    }
    assert run.settings["endpoint"] == "/v1/chat/completions"
    with store.connect() as conn:
        system = conn.execute(select(System)).one()
    assert (system.name, system.provider, system.version) == (
        "gpt-4o-mini",
        "openai",
        "gpt-4o-mini-2024-07-18",
    )
    errors = ingest_path(store, BATCH / "batch_errors.jsonl", mapping=mapping)
    assert _counts(errors) == (2, 0, 0, 2)
    reasons = [r.reason for r in _quarantine(store)[1:]]
    assert reasons == [
        "request 'tiny/direct-d2/main/r0' failed in the batch: rate_limit_exceeded: Rate limit "
        "reached for requests",
        "request 'tiny/neutral-d2/main/r0' failed in the batch: batch_expired: This request "
        "could not be executed before the completion window expired.",
    ]


def test_openai_batch_input_file_is_refused_with_advice(store) -> None:
    with pytest.raises(
        IngestError, match="this is an OpenAI Batch input file; ingest the batch's output"
    ):
        ingest_path(store, BATCH / "batch_input.jsonl")
    assert _count(store, Run) == 0


# ------------------------------------------------------------------------------ promptfoo


def test_promptfoo_v3_results_store_both_providers(store) -> None:
    path = PROMPTFOO / "results_v3.json"
    assert _counts(ingest_path(store, path)) == (10, 8, 0, 2)
    with store.connect() as conn:
        names = dict(conn.execute(select(System.id, System.name)).all())
        rows = list(conn.execute(select(Response)))
    assert set(names.values()) == {"echo", "scripted-7b"}
    scripted = [r for r in rows if names[r.system_id] == "scripted-7b"]
    assert sorted(r.raw_text for r in scripted) == ["No.", "Option 2", "c-option2", "option1"]
    echo = [r for r in rows if names[r.system_id] == "echo"]
    assert len(echo) == 4 and all(r.raw_text == r.prompt and r.abstained for r in echo)
    what_if = next(r for r in scripted if r.probe == "what_if")
    assert what_if.parsed_answer == "option2" and what_if.runner_result["pass"] is False
    assert what_if.runner_result["reason"] == 'Expected output to contain "option1"'
    q = _quarantine(store)
    assert [r.line_no for r in q] == [9, 10] and {r.field for r in q} == {"probe"}
    assert (
        "'direct-d2 no probe': missing mapped field 'probe' (looked at metadata.probe, vars.probe)"
        in q[0].reason
    )
    run = _run(store, path)
    assert (run.runner, run.runner_version) == ("promptfoo", "0.121.20")
    assert run.settings["format_version"] == 3
    with store.connect() as conn:
        meta = dict(conn.execute(select(System.name, System.meta)).all())
    assert meta["scripted-7b"] == {"temperature": 0, "max_tokens": 64}


def test_promptfoo_v2_results_read_vars_and_config_labels(store) -> None:
    """promptfoo 0.55.0 writes version 2: no test metadata, providers without labels."""
    path = PROMPTFOO / "results_v2.json"
    assert _counts(ingest_path(store, path)) == (6, 4, 0, 2)
    with store.connect() as conn:
        names = set(conn.execute(select(System.name)).scalars())
    assert names == {"echo", "scripted-7b"}  # the label comes from the config
    q = _quarantine(store)
    assert {r.field for r in q} == {"individual"}
    assert "must be absent for the main probe" in q[0].reason
    assert _run(store, path).settings["format_version"] == 2


def test_promptfoo_unknown_version_is_a_file_error(store, tmp_path) -> None:
    bad = tmp_path / "v9.json"
    bad.write_text(
        (PROMPTFOO / "results_v3.json").read_text().replace('"version": 3', '"version": 9', 1)
    )
    with pytest.raises(
        IngestError, match=r"v9\.json: field 'results.version': unknown promptfoo .* 9"
    ):
        ingest_path(store, bad)
    assert _count(store, Run) == 0


# ----------------------------------------------------------------------------------- HELM


def test_helm_scenario_state_with_per_instance_stats(store) -> None:
    assert _counts(ingest_path(store, HELM)) == (5, 4, 0, 1)
    rows = _rows(store)
    assert rows["cue1"].parsed_answer == "option1"
    assert rows["cue1"].runner_result == {
        "references": ["option1"],
        "stats": {
            "exact_match": 1.0,
            "quasi_exact_match": 1.0,
            "prefix_exact_match": 1.0,
            "quasi_prefix_exact_match": 1.0,
        },
    }
    assert (rows["cue2"].selected_individual, rows["cue2"].parsed_answer) == ("C", "option2")
    assert rows["cue3"].parsed_answer == "option2"
    assert rows["cue3"].runner_result["stats"]["exact_match"] == 0.0
    assert (rows["cue4"].parsed_answer, rows["cue4"].consequences) == ("no", False)
    assert rows["cue1"].prompt == (
        "Answer the dilemma as asked.\n\n"
        "Dilemma d1. Choose option1 or option2. Reply like: option1\n"
    )
    (q,) = _quarantine(store)
    assert q.reason == (
        "instance 'cue5' (train trial 0): missing mapped field 'probe' (looked at extra_data.probe)"
    )
    run = _run(store, HELM)
    assert (run.runner, run.runner_version) == ("helm", None)
    assert run.settings["run"] == "cue_probes:model=simple_model1"
    assert run.settings["adapter_spec"]["max_tokens"] == 8


# ------------------------------------------------------------------------------ mappings


def test_mapping_for_another_runner_is_refused(store, tmp_path) -> None:
    mapping = tmp_path / "m.toml"
    mapping.write_text('runner = "lm-eval"\n')
    with pytest.raises(
        IngestError, match=r"is for runner 'lm-eval', but this file is read as 'inspect-ai'"
    ):
        ingest_path(store, INSPECT / "cue_probes.eval", mapping=mapping)
    with pytest.raises(ValueError, match="a mapping applies to runner formats"):
        ingest_path(store, DATA / "tiny_responses.jsonl", mapping=mapping)
    assert _count(store, Run) == 0


def test_mapping_file_renames_fields(store, tmp_path) -> None:
    """A mapping that routes the probe through a value map and pins the system name."""
    mapping = tmp_path / "m.toml"
    mapping.write_text(
        'runner = "inspect-ai"\n[fields]\nsystem = { value = "acme-7b" }\n'
        'probe = { path = "metadata.probe", map = { main = "main" } }\n'
    )
    s = ingest_path(store, INSPECT / "cue_probes.json", mapping=mapping)
    assert _counts(s) == (7, 6, 0, 1)
    with store.connect() as conn:
        assert list(conn.execute(select(System.name)).scalars()) == ["acme-7b"]
    # the pass records the mapping it read, byte for byte, for the report's provenance
    with store.connect() as conn:
        recorded = conn.execute(
            select(IngestBatch.mapping).where(IngestBatch.id == s.batch_id)
        ).scalar_one()
    assert recorded == {
        "path": str(mapping),
        "sha256": hashlib.sha256(mapping.read_bytes()).hexdigest(),
        "toml": mapping.read_text(),
    }
    again = ingest_path(store, INSPECT / "cue_probes.eval")  # no mapping: nothing recorded
    batches = provenance(store).batches.set_index(["source_path"])
    assert batches.loc[str(INSPECT / "cue_probes.json"), "mapping"] == recorded
    assert batches.loc[str(INSPECT / "cue_probes.eval"), "mapping"] is None
    assert again.batch_id != s.batch_id


# ----------------------------------------------------------------------------------- CLI


def test_cli_ingests_a_runner_file_with_a_mapping(tmp_path) -> None:
    db = tmp_path / "s.db"
    runner = CliRunner()
    args = ["--db", f"sqlite:///{db}", "ingest", str(DATA / "tiny_bank.json")]
    out = runner.invoke(
        app,
        [*args, str(BATCH / "batch_output.jsonl"), "--mapping", str(BATCH / "mapping.toml")],
        env={"COLUMNS": "250"},
    )
    assert out.exit_code == 0, out.output
    text = out.output.replace("\n", "")
    assert (
        "batch_output.jsonl (openai-batch): read 7 = stored 6 + duplicate 0 + quarantined 1" in text
    )
    assert f"{BATCH / 'batch_output.jsonl'}:6: request 'smoke-test'" in text
    bad = runner.invoke(
        app,
        [
            "--db",
            f"sqlite:///{db}",
            "ingest",
            str(INSPECT / "cue_probes.eval"),
            "-m",
            str(tmp_path / "no.toml"),
        ],
    )
    assert bad.exit_code == 2 and "no.toml: no such mapping file" in bad.output
