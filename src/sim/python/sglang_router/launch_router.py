"""Simulated ``python -m sglang_router.launch_router ARGS``.

sglang-router 0.2.1-0.3.2 rewrite their process title to ``sglang::router`` (setproctitle), hiding every flag;
<=0.1.9 did not (SMG_SIM_PROFILE=legacy-0.1 keeps the argv visible).
"""

import os
import sys

from sglang_router.gateway import main

if __name__ == "__main__":
    profile = os.environ.get("SMG_SIM_PROFILE", "rest-by-uuid-0.3")
    sys.exit(main(sys.argv[1:], profile=profile, title=None if profile == "legacy-0.1" else "sglang::router"))
