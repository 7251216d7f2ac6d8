"""The built-in designs, registered through the same door a third-party design uses."""

from __future__ import annotations

from cuegap.designs._registry import register
from cuegap.designs.conversation import ConversationDesign
from cuegap.designs.dilemma import DilemmaDesign
from cuegap.designs.prompt_variance import PromptVarianceDesign
from cuegap.designs.qa import QADesign

for _design in (DilemmaDesign(), QADesign(), PromptVarianceDesign(), ConversationDesign()):
    register(_design)
