"""BBQ's category names, and the category a file is named after.

BBQ names each data file after its category (``data/Gender_identity.jsonl``,
``data/Race_ethnicity.jsonl``, ``data/SES.jsonl``), and BBQ-family result files keep that
name as their first part (``Gender_identity_gpt4o_results.jsonl``).
"""

from __future__ import annotations

#: BBQ's eleven categories, spelled as its ``category`` field and its file names spell them.
CATEGORIES = (
    "Age",
    "Disability_status",
    "Gender_identity",
    "Nationality",
    "Physical_appearance",
    "Race_ethnicity",
    "Race_x_SES",
    "Race_x_gender",
    "Religion",
    "SES",
    "Sexual_orientation",
)
_BY_LOWER = {c.lower(): c for c in CATEGORIES}
_LONGEST_FIRST = sorted(CATEGORIES, key=len, reverse=True)


def category_from_name(name: str) -> str | None:
    """The BBQ category a file's name starts with, or None.

    Parameters
    ----------
    name : str
        A file name or stem (``Gender_identity.jsonl``, ``SES_gpt4o_results``); case is
        ignored, and the category must be followed by the end, ``_``, ``-`` or ``.``.

    Returns
    -------
    str or None
        The category as BBQ spells it (``Gender_identity``).
    """
    low = name.lower()
    for cat in _LONGEST_FIRST:
        c = cat.lower()
        if low.startswith(c) and (len(low) == len(c) or low[len(c)] in "_-."):
            return cat
    return None
