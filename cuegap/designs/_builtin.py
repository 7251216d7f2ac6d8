"""The built-in designs, registered through the same door a third-party design uses, and
the ``[board]`` policy section of the board report across them (declared the same way)."""

from __future__ import annotations

from cuegap.designs._registry import register
from cuegap.designs.conversation import ConversationDesign
from cuegap.designs.dilemma import DilemmaDesign
from cuegap.designs.prompt_variance import PromptVarianceDesign
from cuegap.designs.qa import QADesign
from cuegap.models import BOARD_KEYS, declare_section

for _design in (DilemmaDesign(), QADesign(), PromptVarianceDesign(), ConversationDesign()):
    register(_design)

declare_section("board", BOARD_KEYS)
