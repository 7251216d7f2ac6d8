"""The registry of study designs.

Built-in designs register through the same door a third-party design uses: a call to
:func:`register` (a package can also name its design in the ``cuegap.designs`` entry
point group, loaded on first use). Shared code iterates :func:`registered` and never
names a design.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from cuegap.designs._base import Design
from cuegap.models import declare_section, withdraw_section

_DESIGNS: dict[str, Design] = {}
_loaded = False


def register(design: Design) -> Design:
    """Add a design to the registry (replacing one of the same name).

    Raises
    ------
    TypeError
        When ``design`` is not a :class:`Design` instance.
    ValueError
        When another registered design already stores one of its analysis kinds.
    """
    if not isinstance(design, Design):
        raise TypeError(f"register() takes a Design instance, got {type(design).__name__}")
    for other in _DESIGNS.values():
        shared = set(other.kinds) & set(design.kinds)
        if other.name != design.name and shared:
            raise ValueError(
                f"design {design.name!r} stores analysis kind(s) {', '.join(sorted(shared))} "
                f"that design {other.name!r} already stores"
            )
    for section, keys in design.policy_keys.items():
        declare_section(section, tuple(keys))
    _DESIGNS[design.name] = design
    return design


def unregister(name: str) -> None:
    """Remove a design from the registry (tests register toy designs), with the policy
    sections it declared."""
    design = _DESIGNS.pop(name, None)
    if design is not None:
        for section in design.policy_keys:
            withdraw_section(section)


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from cuegap.designs import _builtin  # noqa: F401  (registers the built-in designs)

    for ep in entry_points(group="cuegap.designs"):
        design = ep.load()
        register(design() if isinstance(design, type) else design)


def registered() -> dict[str, Design]:
    """Every registered design by name, in registration order (built-ins first)."""
    _load()
    return dict(_DESIGNS)


def get(name: str) -> Design:
    """A registered design by name.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known designs.
    """
    designs = registered()
    if name not in designs:
        raise ValueError(f"unknown design {name!r}; known designs: {', '.join(designs)}")
    return designs[name]


def for_kind(kind: str) -> Design:
    """The design that stores analyses of ``kind``.

    Raises
    ------
    ValueError
        When no registered design stores that kind.
    """
    for design in registered().values():
        if design.owns_kind(kind):
            return design
    raise ValueError(f"no registered design stores analyses of kind {kind!r}")


def analysis_kinds() -> tuple[str, ...]:
    """Every analysis kind the registered designs store."""
    return tuple(k for d in registered().values() for k in d.kinds)


def refuse_options(design: Design, given: frozenset[str], *, command: str) -> None:
    """Refuse the design-specific options that ``design`` does not take, naming the
    designs that do (``--unit applies to the conversation design only``).

    Raises
    ------
    ValueError
    """
    takes = design.analyze_options if command == "analyze" else design.simulate_options
    wrong = sorted(given - takes)
    if not wrong:
        return
    owners: dict[str, list[str]] = {}
    for d in registered().values():
        pool = d.analyze_options if command == "analyze" else d.simulate_options
        for opt in wrong:
            if opt in pool:
                owners.setdefault(opt, []).append(d.name)
    opt = wrong[0]
    labels = [get(name).label or name for name in owners.get(opt, [])]
    flags = " and ".join("--" + o.replace("_", "-") for o in wrong)
    verb = "applies" if len(wrong) == 1 else "apply"
    if not labels:
        raise ValueError(f"{flags} {verb} to no registered design")
    plural = "s" if len(labels) > 1 else ""
    raise ValueError(f"{flags} {verb} to the {' and '.join(labels)} design{plural} only")
