"""Annotated option types shared by the commands, with vLLM's flag names."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from vmemplan.cli._common import gpu_completion, model_completion

ModelArg = Annotated[str, typer.Argument(
    help="Hub id (e.g. meta-llama/Llama-3.1-8B), a local config.json, or a model directory.",
    autocompletion=model_completion, show_default=False)]
GpuOpt = Annotated[str, typer.Option("--gpu", help="GPU id or alias (see `vmemplan gpus`).",
                                     autocompletion=gpu_completion, show_default=False)]
UtilOpt = Annotated[Optional[float], typer.Option(
    "--gpu-memory-utilization", "--util", help="Fraction of the GPU vLLM may use [default: the release's].",
    show_default=False)]
MaxModelLenOpt = Annotated[Optional[int], typer.Option("--max-model-len", help="Longest request, prompt + output.",
                                                       show_default=False)]
MaxNumSeqsOpt = Annotated[Optional[int], typer.Option("--max-num-seqs", help="Most requests in flight.",
                                                      show_default=False)]
MnbtOpt = Annotated[Optional[int], typer.Option("--max-num-batched-tokens", help="Most tokens in one step.",
                                                show_default=False)]
BlockSizeOpt = Annotated[Optional[int], typer.Option("--block-size", help="Tokens per KV block.", show_default=False)]
KvDtypeOpt = Annotated[Optional[str], typer.Option("--kv-cache-dtype", help="auto, fp8, fp8_e4m3, fp8_e5m2, …",
                                                   show_default=False)]
DtypeOpt = Annotated[Optional[str], typer.Option("--dtype", help="auto, bfloat16, float16, float32.",
                                                 show_default=False)]
TpOpt = Annotated[Optional[int], typer.Option("--tensor-parallel-size", "-tp", help="Tensor-parallel ranks.",
                                              show_default=False)]
PpOpt = Annotated[Optional[int], typer.Option("--pipeline-parallel-size", "-pp", help="Pipeline stages.",
                                              show_default=False)]
EagerOpt = Annotated[Optional[bool], typer.Option("--enforce-eager/--no-enforce-eager",
                                                  help="No CUDA graphs.", show_default=False)]
KvMemOpt = Annotated[Optional[str], typer.Option(
    "--kv-cache-memory", "--kv-cache-memory-bytes",
    help="KV cache bytes (e.g. 32G, 34359738368): skips the budget, like vLLM's flag.", show_default=False)]
RevisionOpt = Annotated[Optional[str], typer.Option("--revision", help="Hub revision (branch, tag or commit).",
                                                    show_default=False)]
VersionOpt = Annotated[Optional[str], typer.Option(
    "--vllm-version", help="vLLM release whose rules to apply, e.g. 0.10.1.1 [default: newest].", show_default=False)]
PrefixOpt = Annotated[Optional[bool], typer.Option("--enable-prefix-caching/--no-enable-prefix-caching",
                                                   help="Prefix caching.", show_default=False)]
RequestTokensOpt = Annotated[Optional[int], typer.Option(
    "--request-tokens", help="Also report the KV bytes of one request of this many tokens.", show_default=False)]
NoColorOpt = Annotated[bool, typer.Option("--no-color", help="No colour (also NO_COLOR=1).")]
