"""Reports and re-analysis through the notebook API: what :meth:`cuegap.Audit.report` and
:meth:`cuegap.Audit.reanalyze` do (and ``cuegap report`` and ``cuegap reanalyze`` with
them): one design's report, or the board report across every design a store holds."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

#: What shows the steps of a long computation: given a label ("analyze", "report"), a
#: context manager yielding the callable each step's message goes to.
Steps = Callable[[str], AbstractContextManager[Callable[[str], None]]]


@contextlib.contextmanager
def _silent(_label: str) -> Iterator[Callable[[str], None]]:
    yield lambda _msg: None


def _policy(policy: Any) -> tuple[Any, str]:
    """(the Policy, how messages name it) of a policy file path or a Policy; (None, "")."""
    from cuegap.models import Policy, load_policy
    from cuegap.terminal import safe

    if policy is None:
        return None, ""
    if isinstance(policy, Policy):
        return policy, "the policy given"
    return load_policy(Path(policy)), f"the policy in {safe(policy)}"


def publish(
    audit: Any,
    design: str | None,
    *,
    out: Path | str,
    analysis: int | None,
    formats: tuple[str, ...],
    policy: Any,
    signed: int | str | Path | None,
    steps: Steps | None,
) -> dict[str, tuple[Path, int]]:
    """The body of :meth:`cuegap.Audit.report` (its docstring says what it does)."""
    from cuegap.designs import analysis_kind, designs_in_store, for_kind, get, resolve_design
    from cuegap.reanalysis import publish_report

    engine, say, steps = audit.engine, audit.out.print, steps or _silent
    chosen, where = _policy(policy)
    if signed is not None:
        with steps("report") as step:
            return publish_report(engine, None, out, formats=formats, policy=chosen,
                                  signed=signed, progress=step)  # fmt: skip
    held = designs_in_store(engine) if analysis is None and design is None else []
    if len(held) > 1:  # one board report across every design held
        return _board(audit, [get(name) for name in held], out, formats, chosen, where, steps)
    if analysis is None:
        analysis = get(resolve_design(engine, design)).report_analysis(engine)
    if chosen is not None:  # a report only reads: the re-run happens here, visibly
        kind = analysis_kind(engine, analysis)
        if kind is None:
            raise ValueError(f"--analysis {analysis}: no analysis {analysis} in the store "
                             "(`cuegap analyses` lists them)")  # fmt: skip
        chosen_design = for_kind(kind)
        say(f"Running the {chosen_design.label or chosen_design.name} analysis of analysis "
            f"{analysis} again under {where} (reused when stored): a report only shows "
            "stored analyses.", soft_wrap=True, highlight=False)  # fmt: skip
        with steps("analyze") as step:
            rerun = chosen_design.under_policy(engine, analysis, chosen, step)
        say(f"Reporting analysis {rerun}.", highlight=False)
        analysis = rerun
    with steps("report") as step:
        return publish_report(engine, analysis, out, formats=formats, progress=step)


def _board(audit: Any, designs: list[Any], out: Path | str, formats: tuple[str, ...],
           chosen: Any, where: str, steps: Steps) -> dict[str, tuple[Path, int]]:  # fmt: skip
    """The board report across ``designs``; with a policy, each design's analysis is run
    again under it first (printed), as for one design's report."""
    from cuegap.reanalysis import publish_board

    engine, say = audit.engine, audit.out.print
    analyses = None
    if chosen is not None:
        analyses = {}
        for d in designs:
            try:
                shown = d.report_analysis(engine)
            except ValueError:  # none stored: the board shows its column as "no verdict"
                continue
            say(f"Running the {d.label or d.name} analysis again under {where} (reused when "
                "stored): a report only shows stored analyses.", soft_wrap=True,
                highlight=False)  # fmt: skip
            with steps("analyze") as step:
                analyses[d.name] = d.under_policy(engine, shown, chosen, step)
    say(f"Board report across {len(designs)} designs ({', '.join(d.name for d in designs)}); "
        "--design D reports one alone.", soft_wrap=True, highlight=False)  # fmt: skip
    with steps("report") as step:
        return publish_board(engine, designs, out, formats=formats, analyses=analyses,
                             policy=chosen, progress=step)  # fmt: skip


def _resolved(policy: Any) -> tuple[Any, Path | None]:
    """(the Policy, its file) of a policy file path, a Policy, or None (the built-in)."""
    from cuegap.models import Policy, load_policy

    if isinstance(policy, Policy):
        return policy, None
    path = None if policy is None else Path(policy)
    return load_policy(path), path


def reanalyze(audit: Any, design: str | None, *, out: Path | str, policy: Any, boot: int,
              bayes: bool, values: dict[str, Any]) -> Any:  # fmt: skip
    """The body of :meth:`cuegap.Audit.reanalyze` (its docstring says what it does)."""
    from cuegap.api._options import analyze_options
    from cuegap.designs import designs_in_store, get, resolve_design
    from cuegap.reanalysis import reanalyze_board

    engine = audit.engine
    held = designs_in_store(engine) if design is None else []
    if len(held) > 1:  # every design re-analysed, one board report when any changed
        resolved, path = _resolved(policy)

        def options(d: Any) -> Any:
            return analyze_options(d, values, policy=resolved, policy_path=path, boot=boot,
                                   bayes=bayes)  # fmt: skip

        return reanalyze_board(engine, [get(name) for name in held], Path(out), options,
                               policy=None if policy is None else resolved)  # fmt: skip
    chosen = get(resolve_design(engine, design))
    resolved, path = _resolved(policy)
    options = analyze_options(chosen, values, policy=resolved, policy_path=path, boot=boot,
                              bayes=bayes)  # fmt: skip
    return chosen.reanalyze(engine, Path(out), options)
