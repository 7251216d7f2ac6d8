"""The contract every study design implements: :class:`Design` and its analyse options.

A *study design* says what an item is, how a response becomes an outcome, which counts
the store aggregates, and which statistics, verdict rule and report sections apply. The
shared layers (store, ingest, statistics, reports, compliance, CLI) never name a design:
they ask the registry (:mod:`cuegap.designs`) and call the methods below. A new design is
one subclass registered with :func:`cuegap.designs.register`, the way the four built-in
designs are (``docs/architecture.md``, "How to add a design").

Heavy imports (statistics, reports) happen inside the methods, so that listing the
designs (``cuegap --help``) stays cheap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy.engine import Connection, Engine

from cuegap.designs._counting import Counting

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    """What ``cuegap analyze`` and ``cuegap reanalyze`` were given, for any design.

    ``given`` names the design-specific options the user set on the command line; a
    design refuses those it does not take (:meth:`Design.check_options`).
    """

    policy: Any
    policy_path: Path | None = None
    boot: int = 1000
    seed: int = 2026
    force: bool = False
    bayes: bool = False
    draws: int = 1000
    chains: int = 4
    values: Mapping[str, Any] = field(default_factory=dict)
    given: frozenset[str] = frozenset()

    def get(self, name: str, default: Any = None) -> Any:
        """A design-specific option's value (``default`` when it was not given)."""
        value = self.values.get(name)
        return default if value is None else value


@dataclass(frozen=True, slots=True)
class SimulateOptions:
    """What ``cuegap simulate`` was given; ``given`` as for :class:`AnalyzeOptions`."""

    out_dir: Path
    systems: int
    seed: int
    scale: str = "small"
    values: Mapping[str, Any] = field(default_factory=dict)
    given: frozenset[str] = frozenset()

    def get(self, name: str, default: Any = None) -> Any:
        """A design-specific option's value (``default`` when it was not given)."""
        value = self.values.get(name)
        return default if value is None else value


@dataclass(frozen=True, slots=True)
class StatusPart:
    """A design's part of ``cuegap status``: how many of its records the store holds, with
    their noun (``1,024 QA answers``), and what prints its tables.

    ``show`` takes the console and prints the design's tables (nothing when it has none).
    """

    count: int
    noun: str
    show: Callable[[Any], None] | None = None


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """What ``cuegap plan`` asks a design's planner (:meth:`Design.plan`).

    ``policy`` is the verdict policy to plan under (None: the one stored with the analysis
    planned from; the built-in one for stated assumptions); ``assumptions`` the stated
    assumptions
    (:class:`cuegap.models.PlanAssumptions`), or None to estimate them from the store's
    newest analysis of the design (a pilot or a finished audit).
    """

    policy: Any
    assumptions: Any = None


@dataclass(frozen=True, slots=True)
class ReportSections:
    """A design's part of the board report (:meth:`Design.report_sections`): its report's
    template ``context``, the partial templates of its ``findings`` (summary, findings,
    figures) and of its ``back`` matter (provenance, data quality, methods), each rendered
    with that context.

    ``store`` names the partials that show the whole store rather than this design (its item
    banks, every ingested file, the lines that could not be stored): the board report renders
    each of them once, with the context of the first design that names it, and sets
    ``store_sections_elsewhere`` in every design's context so that the design's own
    partials leave those tables out. A design's own report renders them as before."""

    context: dict[str, Any]
    findings: tuple[str, ...]
    back: tuple[str, ...] = ()
    store: tuple[str, ...] = ()


class PlanUnavailable(ValueError):
    """A design has no planner, or the store holds nothing it can plan from."""


class Design(ABC):
    """A study design.

    Class attributes
    ----------------
    name : str
        What ``--design`` takes.
    label : str
        How messages name its analyses ("no QA analysis is stored"); default ``name``.
    title, description : str
        For listings and messages.
    kinds : tuple of str
        The analysis kinds it stores (``analysis.kind``), the one its report shows first.
    policy_sections : tuple of str
        The verdict policy's sections it applies (printed in its reports).
    policy_keys : mapping of str to tuple of PolicyKey
        The policy sections it owns, with their keys, defaults and ranges
        (:class:`cuegap.models.PolicyKey`); registering the design declares them, so a
        policy file may set them and every policy reads them as attributes.
    analyze_options, simulate_options : frozenset of str
        The design-specific options of ``analyze`` / ``reanalyze`` and ``simulate`` it
        takes (``strategy``, ``factors``, ...); the others are refused by name.
    """

    name: ClassVar[str]
    label: ClassVar[str] = ""
    title: ClassVar[str]
    description: ClassVar[str]
    kinds: ClassVar[tuple[str, ...]]
    policy_sections: ClassVar[tuple[str, ...]] = ("data",)
    policy_keys: ClassVar[Mapping[str, tuple[Any, ...]]] = {}
    analyze_options: ClassVar[frozenset[str]] = frozenset()
    simulate_options: ClassVar[frozenset[str]] = frozenset()

    # -- the store ------------------------------------------------------------------
    @abstractmethod
    def present(self, conn: Connection) -> bool:
        """Whether the store holds responses of this design."""

    def status(self, engine: Engine) -> StatusPart | None:
        """Its part of ``cuegap status``, or None when it stores no records of its own
        (a design that reads another design's records)."""
        return None

    def tally_problems(self, conn: Connection) -> list[str]:
        """What ``cuegap verify`` finds in the derived data it keeps (its count tables no
        longer matching the stored records); empty when all agree or it keeps none."""
        return []

    # -- ingest ---------------------------------------------------------------------
    def response_loader(self) -> Any:
        """The loader class that stores this design's responses
        (:class:`cuegap.ingest._loader._ResponseLoader` or a subclass); None when the design
        reads responses another design stores (prompt variance reads QA answers)."""
        return None

    def bank_loader(self) -> Any:
        """``ingest(engine, path, reader_name, bank) -> IngestSummary`` for this design's
        item banks; None when it has none of its own."""
        return None

    def spark_counting(self) -> Counting | None:
        """Its tally and partition parser for ``cuegap count --engine spark``
        (:class:`cuegap.designs.Counting`); None when it cannot be counted outside the
        store."""
        return None

    # -- analysis -------------------------------------------------------------------
    def settings_type(self) -> type | None:
        """Its analysis settings type: a dataclass with ``to_dict()`` (what an analysis
        stores) and ``from_dict(stored)`` (the one way back; keys an older cuegap did not
        store take their defaults). None for a design that keeps plain dicts."""
        return None

    @abstractmethod
    def analyze(self, engine: Engine, options: AnalyzeOptions, out: Any) -> int:
        """Run (or reuse) the design's analysis, and its Bayesian fit when asked.

        ``out`` is the console the CLI prints to. Returns the id of the analysis its
        report shows.
        """

    @abstractmethod
    def describe(self, kind: str, settings: Mapping[str, Any]) -> dict[str, Any]:
        """What a stored analysis compared, its δ and its sampling, in the design's words:
        ``compared``, ``consequences``, ``delta_pp``, ``delta``, ``sampling``."""

    def verdict_records(
        self, kind: str, settings: Mapping[str, Any], tables: Mapping[str, Any], status: str
    ) -> Any:
        """Its ``verdicts`` table as verdict records (:mod:`cuegap.designs._verdicts`), or
        None when an analysis of ``kind`` gives no verdicts."""
        return None

    def current_analyses(self, engine: Engine) -> list[int]:
        """The stored analyses whose verdicts are this design's current ones: what
        ``cuegap verdicts``, the notebook API's ``verdicts()`` and an evidence bundle read.

        By default the newest analysis of each of :attr:`kinds`, in their order; empty
        when none is stored. A design whose newest analysis of a kind is not the one of
        record overrides it.
        """
        from cuegap.schema import latest_analysis_id

        found = (latest_analysis_id(engine, kind) for kind in self.kinds)
        return [a for a in found if a is not None]

    def shown_analysis(self, engine: Engine, analysis_id: int) -> int:
        """The analysis whose verdicts a report of ``analysis_id`` shows: by default the
        analysis itself; a design with a Bayesian fit returns the fit of the same data and
        question when one is stored (converged or not: a missed gate's verdicts are the
        verdicts of record). "What changed" compares these analyses' verdict records."""
        return analysis_id

    # -- reports ----------------------------------------------------------------------
    def report_kind(self) -> str:
        """The analysis kind its report is rendered from."""
        return self.kinds[0]

    def report_analysis(self, engine: Engine) -> int | None:
        """The analysis ``cuegap report`` shows by default: the newest of
        :meth:`report_kind`.

        Raises
        ------
        ValueError
            When none is stored (:meth:`missing_analysis` names the command to run).
        """
        from cuegap.schema import latest_analysis_id

        found = latest_analysis_id(engine, self.report_kind())
        if found is None:
            raise ValueError(self.missing_analysis())
        return found

    def missing_analysis(self) -> str:
        """The message when no analysis of :meth:`report_kind` is stored."""
        label = self.label or self.name
        return f"no {label} analysis is stored: run cuegap analyze --design {self.name}"

    @abstractmethod
    def report_data(self, engine: Engine, analysis_id: int, progress: Progress | None) -> Any:
        """The report data of a stored analysis: read from the store, never analysed (a
        report only reads; :meth:`under_policy` runs an analysis first, from the CLI)."""

    def under_policy(
        self, engine: Engine, analysis_id: int, policy: Any, progress: Progress | None
    ) -> int:
        """Run (or reuse) the analysis ``analysis_id`` under another verdict ``policy``,
        with its other stored settings; returns the id of the analysis to report.

        ``cuegap report --policy`` calls it, visibly, before rendering.

        Raises
        ------
        ValueError
            When the design cannot re-run an analysis under another policy.
        """
        raise ValueError(
            f"--policy: the {self.name} design's report cannot re-run its analysis under "
            f"another policy; run cuegap analyze --design {self.name} --policy FILE, then "
            "report that analysis"
        )

    @abstractmethod
    def report_context(self, data: Any) -> tuple[dict[str, Any], str]:
        """The template context of its report data, and its top-level template."""

    def report_sections(self, data: Any) -> ReportSections:
        """Its sections in the board report across designs (``cuegap report`` on a store
        holding several): by default those of the generic report
        (:func:`cuegap.reports.generic_report_context`), its result tables, then its
        provenance and policy. A design with its own template names its partials."""
        context, _template = self.report_context(data)
        return ReportSections(context, ("partials/_generic_tables.html.j2",),
                              ("partials/_generic_provenance.html.j2",))  # fmt: skip

    # -- re-analysis ------------------------------------------------------------------
    @abstractmethod
    def reanalyze(self, engine: Engine, out_dir: Path, options: AnalyzeOptions, *,
                  render: bool = True) -> Any:  # fmt: skip
        """Re-analyse and re-report when data changed (a ``Reanalysis``); with
        ``render=False`` only re-analyse (the board re-analysis publishes one report across
        every design)."""

    # -- simulation -------------------------------------------------------------------
    @abstractmethod
    def simulate(self, options: SimulateOptions, out: Any) -> None:
        """Write a simulated dataset with planted effects into ``options.out_dir``."""

    # -- planning ---------------------------------------------------------------------
    def plan(self, engine: Engine | None, request: PlanRequest) -> list[Any]:
        """What the audit's size gives, and what it would take to decide.

        Returns one :class:`cuegap.models.PlanInput` per system and headline contrast (the
        gap to plan for, its standard error at the current size, in the design's size
        unit); :func:`cuegap.models.plan_table` turns them into the plan.

        Raises
        ------
        PlanUnavailable
            When the design has no planner (this default), or nothing to plan from.
        """
        label = self.label or self.name
        raise PlanUnavailable(f"the {label} design has no planner yet (issue 28)")

    # -- shared behaviour ---------------------------------------------------------------
    def owns_kind(self, kind: str) -> bool:
        """Whether ``kind`` is one of this design's stored analysis kinds."""
        return kind in self.kinds

    def __repr__(self) -> str:
        return f"<design {self.name}>"
