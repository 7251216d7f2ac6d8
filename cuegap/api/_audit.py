"""The :class:`Audit` object of the notebook API: one store, read and worked on through
the design registry, the analysis store and publishing."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuegap.api._options import analyze_options
from cuegap.api._working import Working

if TYPE_CHECKING:
    import pandas as pd
    from sqlalchemy.engine import Engine

#: The analyse options every design takes (the others are the designs' own, e.g. strategy).
_SHARED = ("boot", "seed", "force", "draws", "chains")


def _console(quiet: bool) -> Any:
    from rich.console import Console

    return Console(file=io.StringIO(), emoji=False) if quiet else Console(emoji=False)


class Audit(Working):
    """A cuegap store, for a notebook or a script.

    Parameters
    ----------
    engine : Engine
        An initialised store at this cuegap's schema (:func:`open_store` checks it).
    quiet : bool
        Print nothing (default: ``analyze`` and ``simulate`` print what the CLI prints).
    out : Console, optional
        The rich console to print to (the CLI passes its own).
    """

    def __init__(self, engine: Engine, *, quiet: bool = False, out: Any = None) -> None:
        self.engine = engine
        self.quiet = quiet
        self.out = out if out is not None else _console(quiet)

    @contextlib.contextmanager
    def _printing(self) -> Iterator[None]:
        """Where a design's command body prints: nowhere when quiet (the designs' bodies
        print to the CLI's console, which writes to whatever ``sys.stdout`` is)."""
        if not self.quiet:
            yield
            return
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield

    def __repr__(self) -> str:
        from cuegap.schema import describe_url

        return f"<cuegap.Audit {describe_url(self.engine)}>"

    def __enter__(self) -> Audit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the store's connections."""
        self.engine.dispose()

    # -- what the store holds -----------------------------------------------------------
    @property
    def designs(self) -> tuple[str, ...]:
        """The registered designs whose data the store holds, in registry order."""
        from cuegap.designs import designs_in_store

        return tuple(designs_in_store(self.engine))

    def analyses(self) -> pd.DataFrame:
        """Every stored analysis, newest first: ``id``, ``kind``, ``status``,
        ``created_at``, ``compared``, ``consequences``, ``delta_pp``, ``delta``, ``sampling``
        and ``data_fingerprint`` (:func:`cuegap.audit.list_analyses`)."""
        from cuegap.audit import list_analyses

        return list_analyses(self.engine)

    def tables(self, analysis: int | None = None) -> pd.DataFrame:
        """The stored result tables (``name``, ``kind``, ``analysis_id``, ``rows``,
        ``description``): of one analysis, or the newest of each name and kind."""
        from cuegap.audit import list_tables

        return list_tables(self.engine, analysis)

    def table(self, name: str, *, analysis: int | None = None,
              kind: str | None = None) -> pd.DataFrame:  # fmt: skip
        """One stored result table as a DataFrame.

        Parameters
        ----------
        name : str
            A table name, as :meth:`tables` lists them (``verdict_records``, ``qa_cue_gap``).
        analysis : int, optional
            Which analysis (default: the newest that stores ``name``, of ``kind``).
        kind : str, optional
            Only analyses of this kind.

        Raises
        ------
        KeyError
            When no such table is stored; the message lists the stored ones. The name is
            only ever compared with stored names, as a bound parameter.
        TypeError
            When ``name`` is not a string.
        """
        from cuegap.audit import load_table

        if not isinstance(name, str):
            raise TypeError(f"name must be a table name (str), but got {type(name).__name__}")
        return load_table(self.engine, name, analysis, kind)

    def export(self, name: str, out: Path | str, *, analysis: int | None = None,
               kind: str | None = None) -> tuple[Path, int, str]:  # fmt: skip
        """Write one stored table to ``out`` (``.csv`` or ``.parquet``).

        Returns
        -------
        (Path, int, str)
            The file written, and the id and kind of the analysis whose table it is.
        """
        from cuegap.audit import export_table, find_table

        found, found_kind = find_table(self.engine, name, analysis, kind)
        return export_table(self.engine, name, out, found), found, found_kind

    def verdicts(self, design: str | None = None) -> pd.DataFrame:
        """The current verdicts of every design the store holds (or of ``design``), one
        verdict record per row with its ``analysis_id`` first.

        A Bayesian fit's verdict that missed its convergence gate reads *inconclusive*, as
        every reader shows it (:func:`cuegap.designs.gate_applied`).
        """
        import pandas as pd

        from cuegap.designs import gate_applied

        frames = [f.assign(analysis_id=a) for a, f in self.verdict_frames(design)]
        if not frames:
            from cuegap.designs import RECORD_COLUMNS

            return pd.DataFrame(columns=["analysis_id", *RECORD_COLUMNS])
        out = gate_applied(pd.concat(frames, ignore_index=True))
        return out[["analysis_id", *(c for c in out.columns if c != "analysis_id")]]

    def verdict_frames(self, design: str | None = None) -> list[tuple[int, pd.DataFrame]]:
        """(analysis id, its stored verdict records) for the current analyses of each design
        (:meth:`~cuegap.designs.Design.current_analyses`) that stores records.

        Raises
        ------
        ValueError
            For a design that is not registered.
        """
        from cuegap.audit import load_table
        from cuegap.designs import get

        names = [get(design).name] if design is not None else list(self.designs)
        found = []
        for name in names:
            for analysis_id in get(name).current_analyses(self.engine):
                try:
                    found.append((analysis_id, load_table(self.engine, "verdict_records",
                                                          analysis_id)))  # fmt: skip
                except KeyError:  # stored by an older cuegap: no verdict records
                    continue
        return found

    # -- doing things ---------------------------------------------------------------------
    def design(self, name: str | None = None) -> Any:
        """The :class:`~cuegap.designs.Design` a call works on: ``name``, or the only one
        the store holds (ValueError when it holds several and none is named)."""
        from cuegap.designs import get, resolve_design

        return get(resolve_design(self.engine, name))

    def analyze(self, design: str | None = None, *, bayes: bool = False,
                policy: Path | str | Any | None = None, **options: Any) -> int:  # fmt: skip
        """Run (or reuse) a design's analysis, and its Bayesian fit with ``bayes=True``.

        Parameters
        ----------
        design : str, optional
            Default: the only design the store holds.
        bayes : bool
            Also fit the hierarchical Bayesian model.
        policy : path or Policy, optional
            A verdict policy TOML file or a :class:`cuegap.models.Policy` (default: the
            built-in one).
        **options
            ``boot``, ``seed``, ``force``, ``draws``, ``chains`` and the design's own
            options (``strategy``, ``factors``, ``unit``, ``explicit``, ...); a design
            refuses the options it does not take, by name.

        Returns
        -------
        int
            The id of the analysis its report shows.
        """
        from cuegap.models import Policy, load_policy

        policy_path = None if policy is None or isinstance(policy, Policy) else Path(policy)
        chosen = policy if isinstance(policy, Policy) else load_policy(policy_path)
        target = self.design(design)
        shared = {k: options.pop(k) for k in _SHARED if k in options}
        chosen_options = analyze_options(
            target, options, policy=chosen, policy_path=policy_path, bayes=bayes, **shared
        )
        with self._printing():
            return target.analyze(self.engine, chosen_options, self.out)

    def evidence(self, out: Path | str, *, key: Path | str | None = None) -> Any:
        """Write the evidence bundle and its in-toto attestation into ``out``
        (:func:`cuegap.evidence.write_evidence`), signed with ``key`` when given."""
        from cuegap.evidence import write_evidence

        return write_evidence(self.engine, out, key=key)
