"""Simulated SGLang Model Gateway (``sglang-router`` / ``sgl-model-gateway``), stdlib only: see gateway.py."""
