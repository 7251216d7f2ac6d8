"""Which BBQ answer option is the stereotyped target: roles from BBQ's own metadata.

BBQ gives each option a group (``answer_info``: ``["grandmother", "old"]``) and each item
its ``additional_metadata.stereotyped_groups``. The two vocabularies differ, so options are
matched to the stereotyped groups through these rules (case, spaces, hyphens and
underscores ignored: ``low SES`` = ``lowSES``):

* the option whose group is ``unknown`` has role ``unknown``;
* an option matches when its group, or its own answer text (BBQ's Nationality items name
  regions as groups and nationalities as stereotyped groups: ``Africa`` / ``Nigerian``),
  equals a stereotyped group;
* gender aliases: ``F`` = woman = girl = female, ``M`` = man = boy = male;
  ``trans_F`` = trans = transgender women, ``trans_M`` = trans = transgender men,
  ``trans`` = transgender women = transgender men; the ``nonTrans`` groups match none;
* compound groups (``F-Black``, ``lowSES-M-Latino``; Race_ethnicity, Race_x_gender,
  Race_x_SES) match by their race part, the part BBQ's stereotyped groups name;
* Race_x_SES: when both options match by race, the low-SES one is the target (BBQ's SES
  stereotypes are about low SES);
* exactly one matching option is the ``target`` and the other ``non_target``. When none or
  both match (Race_x_gender items that differ only in gender: BBQ's data keeps no record of
  which gender the stereotype is about), both get role ``unresolved``; such items are
  stored but left out of the QA count table (:func:`cuegap.schema.qa_counts`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_GENDER = {
    "f": "f",
    "woman": "f",
    "women": "f",
    "girl": "f",
    "female": "f",
    "m": "m",
    "man": "m",
    "men": "m",
    "boy": "m",
    "male": "m",
}
_GENDER_NAMES = {g: {k for k, v in _GENDER.items() if v == g} for g in set(_GENDER.values())}
_TRANS = {
    "trans": {"trans", "transgenderwomen", "transgendermen"},
    "transf": {"trans", "transgenderwomen", "transgenderwoman", "transwomen"},
    "transm": {"trans", "transgendermen", "transgenderman", "transmen"},
}
_SES = {"lowses", "highses"}
_SEP = re.compile(r"[\s_\-]+")


def canon(text: str) -> str:
    """A group name compared without case, spaces, hyphens or underscores."""
    return _SEP.sub("", text.strip().lower())


def _parts(group: str) -> tuple[str | None, str | None, str]:
    """(SES, gender, race) of a compound group such as ``lowSES-F-Black``."""
    parts = group.split("-")
    ses = gender = None
    if len(parts) > 1 and canon(parts[0]) in _SES:
        ses, parts = canon(parts[0]), parts[1:]
    if len(parts) > 1 and canon(parts[0]) in ("f", "m"):
        gender, parts = canon(parts[0]), parts[1:]
    return ses, gender, "-".join(parts)


def names(group: str, text: str) -> set[str]:
    """Every canonical name an option with BBQ group ``group`` and text ``text`` goes by."""
    out = {canon(group), canon(text)}
    key = canon(group)
    if key in _GENDER:
        out |= _GENDER_NAMES[_GENDER[key]]
    out |= _TRANS.get(key, set())
    ses, gender, race = _parts(group)
    if ses or gender:
        out.add(canon(race))
    out.discard("")
    return out


def roles(infos: Sequence[tuple[str, str]], stereotyped: Sequence[str], category: str) -> list[str]:
    """The role of each option.

    Parameters
    ----------
    infos : sequence of (str, str)
        Each option's ``answer_info`` entry: (text, group).
    stereotyped : sequence of str
        ``additional_metadata.stereotyped_groups``.
    category : str
        BBQ's category (``Race_x_SES`` gets the low-SES tie rule).

    Returns
    -------
    list of str
        ``target``, ``non_target``, ``unknown`` or ``unresolved`` per option.
    """
    wanted = {canon(s) for s in stereotyped} - {""}
    out = ["unknown" if canon(g) == "unknown" else "" for _, g in infos]
    hits = [
        i for i, (text, group) in enumerate(infos) if not out[i] and names(group, text) & wanted
    ]
    if len(hits) > 1 and canon(category) == "racexses":
        low = [i for i in hits if _parts(infos[i][1])[0] == "lowses"]
        hits = low if len(low) == 1 else hits
    if len(hits) == 1:
        return [r or ("target" if i == hits[0] else "non_target") for i, r in enumerate(out)]
    return [r or "unresolved" for r in out]
