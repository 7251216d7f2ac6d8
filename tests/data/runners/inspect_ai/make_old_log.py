"""Write a .eval log with an older inspect-ai (0.3.150: deflate-compressed zip members).

python make_old_log.py OUT_DIR
"""

import sys

from inspect_ai import eval
from inspect_ai.model import get_model
from make_logs import cue_probes, scripted

if __name__ == "__main__":
    eval(
        cue_probes(),
        model=get_model("mockllm/model", custom_outputs=scripted),
        log_dir=sys.argv[1],
        log_format="eval",
        temperature=0.0,
        max_tokens=64,
        seed=7,
        display="none",
    )
