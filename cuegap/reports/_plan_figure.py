"""The plan figure: decision probability against size, one line per system, with the
policy's target marked (``cuegap plan --figure``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from cuegap.models import PlanInput, decision_curve
from cuegap.reports._figure_style import OKABE_ITO

_COLOURS = list(OKABE_ITO.values())


def plan_figure(
    inputs: Sequence[PlanInput], *, target: float, out: Path, max_factor: float = 100.0
) -> Path:
    """Draw P(flag) (solid; at the estimated gap) and P(pass) (dashed; at a true gap of 0)
    against size on a log axis, one colour per system and contrast, one panel per size
    unit; a horizontal line marks ``target`` and a dot each system's current size."""
    import matplotlib.pyplot as plt

    units = sorted({i.size_unit for i in inputs})
    fig, axes = plt.subplots(1, len(units), figsize=(6.5 * len(units), 4.2), squeeze=False)
    for ax, unit in zip(axes[0], units, strict=True):
        mine = [i for i in inputs if i.size_unit == unit]
        low = max(1.0, min(i.current_size for i in mine) / 4)
        high = max(i.current_size for i in mine) * max_factor
        # A planner that simulates (PlanInput.decide) pays for every size: fewer points.
        points = 16 if any(i.decide is not None for i in mine) else 120
        sizes = np.unique(np.geomspace(low, high, points).round())
        curve = decision_curve(mine, sizes)
        for k, inp in enumerate(mine):
            colour = _COLOURS[k % len(_COLOURS)]
            for decision, style in (("flag", "-"), ("pass", "--")):
                c = curve[
                    (curve["system"] == inp.system)
                    & (curve["contrast"] == inp.contrast)
                    & (curve["decision"] == decision)
                ]
                label = f"{inp.system} {decision}" + (
                    f" ({inp.contrast})" if len({i.contrast for i in mine}) > 1 else ""
                )
                ax.plot(c["size"], c["p_decide"], style, color=colour, label=label)
            ax.axvline(inp.current_size, color=colour, lw=0.6, alpha=0.5)
        ax.axhline(target, color="black", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_ylim(0, 1)
        ax.set_xlabel(unit)
        ax.set_ylabel("probability of the decision")
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
