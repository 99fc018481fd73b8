"""Simulated SGLang package for the GPU Sessions test/demo node.

Only ``python3 -m sglang.launch_server`` is provided (see launch_server.py). It
needs no GPU and no third-party packages: it prints log lines in SGLang's real
formats and answers SGLang's HTTP endpoints, so that tools that watch real
SGLang servers can be exercised against it. Nothing here is the real SGLang.
"""

import os as _os

__version__ = _os.environ.get("SGLANG_SIM_VERSION", "0.5.11")
