"""The request layer: what the user typed, parsed and checked before any law runs.

:mod:`~vmemplan.request.flags` parses the structured engine flags (``--speculative-config``,
``--limit-mm-per-prompt``) into the plain values the laws take; ``vllm_args`` parses argv
exactly as ``vllm serve`` does, against the argument table of the release
(registry/vllm/args/); ``gpu_match`` finds a registry GPU from any name nvidia-smi or torch
print; ``refusals`` holds the configuration checks vLLM makes before or during startup, with
vLLM's own messages.  Pure functions; the registry files are the only input they read.
"""
