"""``cuegap count``: a design's tally computed from raw files on a counting engine (Spark)."""

from __future__ import annotations

import importlib.util
import shutil
from typing import Annotated

import typer

from cuegap.cli._ingest import _print_summary
from cuegap.cli.common import _engine, _fail, console, friendly
from cuegap.terminal import safe


def _counting_design(requested: str | None, paths: list[str]):
    """The design to count for: ``requested``, else the only one that can be counted, else
    the one whose counting reader reads the local files given."""
    from cuegap.designs import get, registered

    if requested is not None:
        design = get(requested)
        if design.spark_counting() is None:
            raise ValueError(f"design {requested!r} cannot be counted on Spark yet")
        return design
    able = [d for d in registered().values() if d.spark_counting() is not None]
    if len(able) > 1:
        found = _local_readers(paths)
        fitting = [d for d in able if d.spark_counting().reader in found]
        able = fitting if len(fitting) == 1 else able
    if len(able) != 1:
        names = ", ".join(d.name for d in able) or "none"
        raise ValueError(f"name the design with --design; designs counted on Spark: {names}")
    return able[0]


def _local_readers(paths: list[str]) -> set[str]:
    """The readers that detect the given local files (URLs and Parquet files tell none)."""
    from pathlib import Path

    from cuegap.ingest.registry import detect_reader

    found = set()
    for given in paths:
        path = Path(given)
        if "://" in given or not path.is_file():
            continue
        with path.open("rb") as fh:
            if fh.read(4) == b"PAR1":
                continue
        try:
            found.add(detect_reader(path).name)
        except ValueError:
            continue
    return found


def spark_problem() -> str | None:
    """Why Spark cannot run here (pyspark or Java missing), else None."""
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed: pip install 'cuegap[spark]'"
    if shutil.which("java") is None:
        return (
            "Spark needs Java and no `java` is on PATH "
            "(e.g. apt-get install openjdk-17-jre-headless)"
        )
    return None


def _settings(pairs: list[str]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf takes KEY=VALUE, got {pair!r}")
        conf[key.strip()] = value
    return conf


def _check_local(paths: list[str], reader: str | None) -> None:
    """Refuse, before Spark starts, a local path that is missing, a folder, or a file of
    another format than the design's counting reads (URLs are left to Spark; no format
    check when ``reader`` is None)."""
    from pathlib import Path

    from cuegap.ingest.registry import detect_reader

    for given in paths:
        if "://" in given:
            continue
        path = Path(given)
        if not path.is_file():
            what = "a folder (name its files)" if path.is_dir() else "no such file"
            raise ValueError(f"{given}: {what}")
        with path.open("rb") as fh:
            if fh.read(4) == b"PAR1":  # Parquet: its columns are the reader's JSONL fields
                continue
        if reader is None:
            continue
        found = detect_reader(path).name
        if found != reader:
            raise ValueError(f"{given}: a {found} file; counting on Spark reads {reader} files")


@friendly
def count(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Result files to count (JSONL, or Parquet whose columns are the JSONL "
            "fields): local paths or URLs Spark reads."
        ),
    ],
    engine: Annotated[
        str, typer.Option("--engine", help="The counting engine: spark (the only one yet).")
    ] = "spark",
    design: Annotated[
        str | None,
        typer.Option(
            "--design",
            help="Study design of the files (default: the one whose reader reads them).",
        ),
    ] = None,
    master: Annotated[
        str,
        typer.Option(
            "--master", help="Spark's master URL: local[N], spark://host:7077, yarn, k8s://..."
        ),
    ] = "local[2]",
    conf: Annotated[
        list[str] | None,
        typer.Option(
            "--conf", help="A Spark setting, KEY=VALUE (repeatable): spark.executor.memory=4g."
        ),
    ] = None,
) -> None:
    """Count result files into the store's tally on Spark, without storing the responses.

    Runs the same reader and answer parsing as `cuegap ingest`, per file, on Spark; the
    store gets the tally that `analyze` reads, each file's name, size and SHA-256 with its
    read = counted + duplicate + quarantined, a sample of quarantined lines with their
    reasons, and the engine's version. Load the item bank first with `cuegap ingest`.
    """
    if engine != "spark":
        raise _fail(f"--engine: unknown counting engine {engine!r}; known engines: spark")
    settings = _settings(conf or [])
    if design is None:  # missing files and folders, before the files choose the design
        _check_local(paths, None)
    chosen = _counting_design(design, paths)
    _check_local(paths, chosen.spark_counting().reader)
    if (problem := spark_problem()) is not None:
        raise _fail(problem)
    from cuegap.ingest import count_files

    store = _engine(create=True)
    summaries = count_files(
        store,
        chosen.spark_counting(),
        paths,
        master=master,
        conf=settings,
        report=lambda line: console.print(safe(line), highlight=False),
    )
    for s in summaries:
        _print_summary(s)
