"""Simulated ``python -m smg launch ARGS`` (title ``smg::router``) and, with SMG_SIM_ARGV=visible, the Rust binary
``smg launch ARGS`` whose argv stays visible (the cmdline is rewritten to read exactly that)."""

import os
import sys

from sglang_router.gateway import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] in ("launch", "start"):
        args = args[1:]
    profile = os.environ.get("SMG_SIM_PROFILE", "smg-1.x")
    title = "smg::router"
    if os.environ.get("SMG_SIM_ARGV") == "visible":
        title = "\0".join(["smg", "launch"] + args)
    sys.exit(main(args, profile=profile, title=title))
