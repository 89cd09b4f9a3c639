"""From a pasted vLLM command (or config file, or GPU name) to vmemplan's request.

``vllm_args`` parses argv exactly as ``vllm serve`` does, against the argument table of the
release (registry/vllm/args/); ``gpu_match`` finds a registry GPU from any name nvidia-smi or
torch print; ``refusals`` holds the configuration checks vLLM makes before or during startup,
with vLLM's own messages.  Pure functions; the registry files are the only input they read.
"""
