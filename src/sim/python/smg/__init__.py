"""Simulated ``smg`` (Shepherd Model Gateway 1.x) launcher: ``python -m smg launch ARGS`` (see sglang_router/gateway.py)."""
