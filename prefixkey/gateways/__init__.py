"""Routing plugins for the gateways fleets already run (LiteLLM, Ray Serve LLM)."""
