"""What :class:`cuegap.Audit` does to a store besides reading and analysing it: ingest,
simulate, report, re-analyse (the bodies of ``cuegap ingest``, ``simulate``, ``report``
and ``reanalyze``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuegap.api._ingest import IngestPlan, plan_ingest
from cuegap.api._report import Steps

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine


class Working:
    """The working methods of :class:`cuegap.Audit` (a mixin: it needs ``engine``, ``out``
    and ``_printing`` from the class)."""

    engine: Engine
    out: Any

    def _printing(self) -> contextlib.AbstractContextManager[None]:  # pragma: no cover
        raise NotImplementedError

    def report(
        self,
        design: str | None = None,
        *,
        out: Path | str,
        analysis: int | None = None,
        formats: tuple[str, ...] = ("html", "pdf"),
        policy: Path | str | Any | None = None,
        signed: int | str | Path | None = None,
        steps: Steps | None = None,
    ) -> dict[str, tuple[Path, int]]:
        """Render, write and register a report of stored analyses (``cuegap report``).

        On a store holding several designs, with neither ``design`` nor ``analysis``, the
        board report across them all; otherwise one design's report.

        Parameters
        ----------
        design : str, optional
            Report this design alone (default: the only design held, or the board).
        out : path
            The folder the files go to; existing files are never replaced.
        analysis : int, optional
            Default: the newest analysis the design's report shows.
        formats : tuple of str
            ``html``, ``pdf`` or both.
        policy : path or Policy, optional
            Run the analysis (each design's, for the board) again under this policy first,
            printed (reused when stored): a report only shows stored analyses.
        signed : report id, path or hash, optional
            Write a signed copy of this registered report instead: exactly the reviewed
            content, its sign-off block filled in.
        steps : callable, optional
            Shows a long computation's steps (the CLI's spinner); see ``Steps``.

        Returns
        -------
        dict
            Format -> (path written, registered report id).
        """
        from cuegap.api._report import publish

        with self._printing():
            return publish(self, design, out=out, analysis=analysis, formats=formats,
                           policy=policy, signed=signed, steps=steps)  # fmt: skip

    def reanalyze(self, design: str | None = None, *, out: Path | str,
                  policy: Path | str | Any | None = None, boot: int = 1000,
                  bayes: bool = False, **options: Any) -> Any:  # fmt: skip
        """Re-analyse and re-report when data changed since the last report
        (``cuegap reanalyze``).

        On a store holding several designs (and no ``design``), every design is re-analysed
        where its data changed and one new board report version is published.

        Parameters
        ----------
        design : str, optional
            Re-analyse this design alone (default: the only one held, or every one).
        out : path
            Where a new report version goes.
        policy : path or Policy, optional
            The verdict policy (default: the built-in one).
        boot : int
            Bootstrap replicates.
        bayes : bool
            Refit the hierarchical Bayesian model too.
        **options
            The design's own options (``explicit``, ``strategy``, ...); None is "not given".

        Returns
        -------
        Reanalysis
            What changed and what was written (``exit_code``: 0 unchanged, 1 changed).

        Raises
        ------
        cuegap.api.LockHeld
            When another re-analysis holds the store's lock.
        """
        from cuegap.api._report import reanalyze

        with self._printing():
            return reanalyze(self, design, out=out, policy=policy, boot=boot, bayes=bayes,
                             values=options)  # fmt: skip

    def simulate(self, design: str, out: Path | str, *, systems: int = 3, seed: int = 0,
                 scale: str = "small", **options: Any) -> Path:  # fmt: skip
        """Write a simulated dataset of ``design`` with planted effects into ``out``
        (the store is not touched: :meth:`ingest` it); :func:`cuegap.api.simulate`.
        Returns the folder."""
        from cuegap.api._simulate import simulate

        with self._printing():
            return simulate(design, out, systems=systems, seed=seed, scale=scale,
                            console=self.out, **options)  # fmt: skip

    def ingest(
        self,
        *paths: Path | str,
        format: str | None = None,
        mapping: Path | str | None = None,
        system: str | None = None,
        plan: IngestPlan | None = None,
        progress: Callable[[Path], AbstractContextManager[Any]] | None = None,
        each: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        """Ingest files or folders (item banks of all first), as ``cuegap ingest`` does.

        Parameters
        ----------
        *paths : path
            Files or folders (checked first: :func:`cuegap.api.plan_ingest`).
        format, mapping, system
            A forced reader, a runner metadata mapping (TOML), the system of records that
            name none.
        plan : IngestPlan, optional
            An already checked plan, instead of ``paths`` and the three above.
        progress : callable, optional
            Given a file, a context manager yielding its progress callback (or None).
        each : callable, optional
            Called with each file's summary as soon as it is stored.

        Returns
        -------
        list of IngestSummary
            One per file; :func:`cuegap.api.ingest_failures` names those that stored
            nothing or were not read to their end.
        """
        from cuegap.ingest import ingest_path

        if plan is None:
            plan = plan_ingest(paths, format=format, mapping=mapping, system=system)
        elif paths:
            raise TypeError("give either paths or plan, not both")
        summaries = []
        for path in plan.files:
            with progress(path) if progress else contextlib.nullcontext() as bar:
                summary = ingest_path(self.engine, path, format=plan.format, progress=bar,
                                      mapping=plan.mapping, system=plan.system)  # fmt: skip
            if each is not None:
                each(summary)
            summaries.append(summary)
        return summaries

    def recover(self) -> list[Any]:
        """Seal the ingest batches that killed passes left "running"; one
        ``Interrupted`` per batch (``sealed`` False: still running elsewhere)."""
        from cuegap.ingest import recover_interrupted

        return recover_interrupted(self.engine)
