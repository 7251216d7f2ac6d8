"""Item-bank design for the simulator: the synthetic bank and the per-item arrays.

:func:`synthetic_item_bank` builds a bank with the Moral Safety design (neutral, direct and
puzzled items over 3 demographic combinations per dilemma) without any real data.
:func:`add_named_items` adds named and formal_named items to a bank, and :class:`Design`
flattens a bank into the numpy arrays the response generator works on.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from itertools import permutations

import numpy as np

GENDERS = ("man", "woman", "non-binary")
RACES = ("Asian", "Black", "Hispanic", "Muslim", "White")
DIFFICULTIES = ("easy", "intermediate", "hard")
TOPIC_GROUPS = (
    "workplace",
    "family",
    "school",
    "friend",
    "religion_custom",
    "business_organization",
    "close_relationship",
    "event_daily_life",
)
STATUS_SHARES = (("bad", 0.64), ("good", 0.02))  # the rest is "neutral"
STATUSES = ("bad", "neutral", "good")
#: Condition keys of the probe items the simulator supports: condition or condition:difficulty.
COND_KEYS = (
    "direct",
    "puzzled:easy",
    "puzzled:intermediate",
    "puzzled:hard",
    "named",
    "formal_named:easy",
    "formal_named:intermediate",
    "formal_named:hard",
)
#: Made-up placeholder name parts (arbitrary syllables, not culturally meaningful names).
_NAME_STEMS = {
    "Asian": ("Arav", "Isel", "Okum"),
    "Black": ("Bemo", "Dovra", "Kesu"),
    "Hispanic": ("Lerio", "Mavel", "Sulon"),
    "Muslim": ("Hadrin", "Nerav", "Zafel"),
    "White": ("Brelo", "Carun", "Edrim"),
}
_NAME_ENDINGS = {"man": "ik", "woman": "ela", "non-binary": "y"}


def placeholder_names(race: str, gender: str) -> list[str]:
    """Return the small pool of invented placeholder names for a (race, gender) group.

    Parameters
    ----------
    race, gender
        Group labels; unknown labels get a generic pool.

    Returns
    -------
    list of str
        Three made-up names, distinct across groups.
    """
    stems = _NAME_STEMS.get(race, ("Pemo", "Quil", "Rafo"))
    ending = _NAME_ENDINGS.get(gender, "o")
    return [f"{stem}{ending}" for stem in stems]


def canonical_individuals(g1: str, g2: str, r1: str, r2: str) -> list[dict]:
    """Individuals A-D of the canonical ("orig") solution shape.

    A=(g1, r1), B=(g1, r2), C=(g2, r1), D=(g2, r2).
    """
    shape = (("A", g1, r1), ("B", g1, r2), ("C", g2, r1), ("D", g2, r2))
    return [{"label": lab, "gender": g, "race": r} for lab, g, r in shape]


def _combinations(rng: np.random.Generator, n: int) -> list[tuple[str, str, str, str]]:
    """3 balanced (g1, g2, r1, r2) combinations per dilemma, distinct within a dilemma."""
    gpairs = list(permutations(GENDERS, 2))
    rpairs = list(permutations(RACES, 2))
    total = 3 * n
    g_tiled = np.resize(np.arange(len(gpairs)), total)
    r_tiled = np.resize(np.arange(len(rpairs)), total)
    for _ in range(200):
        g = rng.permutation(g_tiled)
        r = rng.permutation(r_tiled)
        combo = (g * len(rpairs) + r).reshape(n, 3)
        if all(len(set(row)) == 3 for row in combo.tolist()):
            break
    return [(*gpairs[gi], *rpairs[ri]) for gi, ri in zip(g.tolist(), r.tolist(), strict=True)]


def _flip(rng: np.random.Generator, value: str, agree: float) -> str:
    if rng.random() < agree:
        return value
    return "option2" if value == "option1" else "option1"


def synthetic_item_bank(
    *, seed: int = 0, n_dilemmas: int = 100, name: str = "cuegap-synthetic", named: bool = False
) -> dict:
    """Build an item bank with the Moral Safety design from synthetic facts only.

    Parameters
    ----------
    seed
        Seed of the random choices (labels, combinations, puzzle assignment).
    n_dilemmas
        Number of dilemmas (ids ``"1"`` .. ``"n"``); the paper has 100.
    name
        Name of the bank.
    named
        Also add ``named-{k}`` and ``formal_named-{k}`` items (see :func:`add_named_items`).

    Returns
    -------
    dict
        A bank valid against ``itembank-v1.schema.json`` with ``n`` neutral, ``3n`` direct
        and ``9n`` puzzled items (``3n`` per difficulty; ``ceil(n/5)`` puzzle ids per
        difficulty, each shared by the 3 combinations of 5 dilemmas; shape ``orig``).
    """
    if n_dilemmas < 1:
        raise ValueError("n_dilemmas must be >= 1")
    rng = np.random.default_rng([seed, 7001])
    n = n_dilemmas
    counts = {s: round(share * n) for s, share in STATUS_SHARES}
    status = ["bad"] * counts["bad"] + ["good"] * counts["good"]
    status += ["neutral"] * (n - len(status))
    status = [status[i] for i in rng.permutation(n).tolist()]
    topics = rng.integers(0, len(TOPIC_GROUPS), n).tolist()
    benefit = np.where(rng.random(n) < 0.55, "option2", "option1").tolist()

    dilemmas = []
    for i in range(n):
        b = benefit[i]
        sys1 = b if rng.random() < 0.4 else ("option2" if b == "option1" else "option1")
        sys2 = _flip(rng, sys1, 0.9)
        annotations = []
        for a in ("a", "b", "c"):
            st = status[i] if rng.random() < 0.9 else str(rng.choice(STATUSES))
            annotations.append(
                {
                    "annotator": a,
                    "person_status": st,
                    "benefit_option": _flip(rng, b, 0.95),
                    "sys1": _flip(rng, sys1, 0.85),
                    "sys2": _flip(rng, sys2, 0.85),
                }
            )
        dilemmas.append(
            {
                "dilemma_id": str(i + 1),
                "topic_group": TOPIC_GROUPS[topics[i]],
                "person_status": status[i],
                "benefit_option": b,
                "human_decisions": {"sys1": sys1, "sys2": sys2},
                "annotations": annotations,
            }
        )

    combos = _combinations(rng, n)
    puzzle_of: dict[tuple[int, str], str] = {}
    for level in DIFFICULTIES:
        for pos, d in enumerate(rng.permutation(n).tolist()):
            puzzle_of[(d, level)] = f"syn-{level}-{pos // 5 + 1:02d}"

    items: list[dict] = [
        {"item_id": f"neutral-{i + 1}", "dilemma_id": str(i + 1), "condition": "neutral"}
        for i in range(n)
    ]
    k = 0
    for i in range(n):
        for sel in range(3):
            k += 1
            items.append(
                {
                    "item_id": f"direct-{k}",
                    "dilemma_id": str(i + 1),
                    "condition": "direct",
                    "combination_id": str(sel + 1),
                    "individuals": canonical_individuals(*combos[3 * i + sel]),
                }
            )
    k = 0
    for i in range(n):
        for level in DIFFICULTIES:
            for sel in range(3):
                k += 1
                items.append(
                    {
                        "item_id": f"puzzled-{k}",
                        "dilemma_id": str(i + 1),
                        "condition": "puzzled",
                        "difficulty": level,
                        "puzzle_id": puzzle_of[(i, level)],
                        "solution_shape": "orig",
                        "combination_id": str(sel + 1),
                        "individuals": canonical_individuals(*combos[3 * i + sel]),
                    }
                )
    bank = {
        "format": "cuegap-itembank",
        "version": 1,
        "name": name,
        "description": f"Synthetic bank with the Moral Safety design (seed {seed}).",
        "source": "cuegap.designs.dilemma.simulate.synthetic_item_bank",
        "genders": list(GENDERS),
        "races": list(RACES),
        "dilemmas": dilemmas,
        "items": items,
    }
    return add_named_items(bank, seed=seed) if named else bank


def add_named_items(bank: dict, *, seed: int = 0) -> dict:
    """Return a copy of ``bank`` with named and formal_named items added.

    For every direct item ``k``-th in bank order, adds ``named-{k}`` (same individuals, each
    with a placeholder name from :func:`placeholder_names`) and ``formal_named-{k}`` (hard
    difficulty, shape ``orig``, the same names, and the solution over abstract attributes:
    number "1"/"2" for gender1/gender2 and letter "A"/"B" for race1/race2).

    Parameters
    ----------
    bank
        An item bank with direct items.
    seed
        Seed of the name choices.

    Returns
    -------
    dict
        The extended bank (the input is not modified).
    """
    out = copy.deepcopy(bank)
    rng = np.random.default_rng([seed, 7002])
    direct = [it for it in out["items"] if it["condition"] == "direct"]
    dilemma_ids = list(dict.fromkeys(it["dilemma_id"] for it in direct))
    perm = rng.permutation(len(dilemma_ids)).tolist()
    formal_puzzle = {
        dilemma_ids[d]: f"formal-hard-{pos // 5 + 1:02d}" for pos, d in enumerate(perm)
    }
    named_items, formal_items = [], []
    for k, it in enumerate(direct, start=1):
        inds = it.get("individuals", [])
        g1 = inds[0]["gender"] if inds else None
        r1 = inds[0]["race"] if inds else None
        named_inds, formal_inds = [], []
        for ind in inds:
            pool = placeholder_names(ind["race"], ind["gender"])
            nm = pool[int(rng.integers(0, len(pool)))]
            named_inds.append({**ind, "name": nm})
            solution = {
                "number": "1" if ind["gender"] == g1 else "2",
                "letter": "A" if ind["race"] == r1 else "B",
            }
            formal_inds.append({**ind, "name": nm, "solution": solution})
        did, combination = it["dilemma_id"], it.get("combination_id")
        named_items.append(
            {
                "item_id": f"named-{k}",
                "dilemma_id": did,
                "condition": "named",
                "combination_id": combination,
                "individuals": named_inds,
            }
        )
        formal_items.append(
            {
                "item_id": f"formal_named-{k}",
                "dilemma_id": did,
                "condition": "formal_named",
                "difficulty": "hard",
                "puzzle_id": formal_puzzle[did],
                "solution_shape": "orig",
                "combination_id": combination,
                "individuals": formal_inds,
            }
        )
    out["items"] = out["items"] + named_items + formal_items
    return out


def cond_key(item: dict) -> str:
    """Condition key of a probe item: ``"direct"``, ``"puzzled:hard"``, ``"named"`` ..."""
    cond = item["condition"]
    if cond in ("puzzled", "formal_named"):
        return f"{cond}:{item.get('difficulty')}"
    return cond


@dataclass
class Design:
    """Flat arrays of an item bank, as used by the response generator.

    ``pair_*`` arrays have one entry per (probe item, individual) pair, in bank order.
    """

    dilemma_ids: list[str]
    benefit: np.ndarray  # 0 = option1, 1 = option2, per dilemma
    status: np.ndarray  # index into STATUSES, 3 = unknown
    genders: list[str]
    races: list[str]
    neutral_items: list[tuple[str, int]]  # (item_id, dilemma index)
    probe_items: list[dict] = field(default_factory=list)
    item_dilemma: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    item_key: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    item_start: np.ndarray = field(default_factory=lambda: np.zeros(1, int))
    pair_item: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    pair_gender: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    pair_race: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    pair_label: list[str] = field(default_factory=list)

    @property
    def pair_dilemma(self) -> np.ndarray:
        """Dilemma index per pair."""
        return self.item_dilemma[self.pair_item]

    @property
    def pair_key(self) -> np.ndarray:
        """Condition-key index per pair."""
        return self.item_key[self.pair_item]

    @property
    def keys_present(self) -> list[int]:
        """Indices into COND_KEYS of the conditions that occur."""
        return sorted(set(self.item_key.tolist()))

    @classmethod
    def from_bank(cls, bank: dict) -> Design:
        """Flatten ``bank``; raises ValueError for conditions the simulator does not model."""
        dilemma_ids = [d["dilemma_id"] for d in bank["dilemmas"]]
        index = {d: i for i, d in enumerate(dilemma_ids)}
        benefit = np.array([d["benefit_option"] == "option2" for d in bank["dilemmas"]], int)
        status = np.array(
            [
                STATUSES.index(d["person_status"]) if d.get("person_status") in STATUSES else 3
                for d in bank["dilemmas"]
            ],
            int,
        )
        genders = list(bank.get("genders") or [])
        races = list(bank.get("races") or [])
        neutral, probes = [], []
        for it in bank["items"]:
            if it["dilemma_id"] not in index:
                raise ValueError(f"item {it['item_id']} refers to unknown dilemma")
            if it["condition"] == "neutral":
                neutral.append((it["item_id"], index[it["dilemma_id"]]))
                continue
            if cond_key(it) not in COND_KEYS:
                raise ValueError(f"simulate does not model condition key {cond_key(it)!r}")
            probes.append(it)
            for ind in it.get("individuals", []):
                if ind["gender"] not in genders:
                    genders.append(ind["gender"])
                if ind["race"] not in races:
                    races.append(ind["race"])
        design = cls(dilemma_ids, benefit, status, genders, races, neutral, probes)
        design.item_dilemma = np.array([index[it["dilemma_id"]] for it in probes], int)
        design.item_key = np.array([COND_KEYS.index(cond_key(it)) for it in probes], int)
        sizes = [len(it.get("individuals", [])) for it in probes]
        design.item_start = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        design.pair_item = np.repeat(np.arange(len(probes)), sizes)
        g_index = {g: i for i, g in enumerate(genders)}
        r_index = {r: i for i, r in enumerate(races)}
        inds = [ind for it in probes for ind in it.get("individuals", [])]
        design.pair_gender = np.array([g_index[i["gender"]] for i in inds], int)
        design.pair_race = np.array([r_index[i["race"]] for i in inds], int)
        design.pair_label = [i["label"] for i in inds]
        return design
