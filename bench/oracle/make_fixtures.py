#!/usr/bin/env python
"""Run vLLM 0.33.0's own planning code (the vllm-oracle) per case and write test fixtures.

One oracle process per case (vLLM keeps global state), at most ``--jobs`` at a time.  Each
case becomes ``tests/fixtures/oracle/<id>.json``: a compact record of what vLLM would plan
for one rank (KV specs, groups, blocks, tokens, concurrency, the bytes of parameters and
buffers) plus the exact command, the vLLM version and the config's provenance, so that
anyone can regenerate it.

    /work/vllm/oracle-venv/bin/python bench/oracle/make_fixtures.py \\
        --oracle ../shared/tools/vllm-oracle/oracle.py [--only ID ...] [--jobs 2]

``bench/oracle/cases.json`` lists the cases.  The interpreter running this script must
be the oracle's venv (see ../shared/tools/vllm-oracle/README.md), or pass ``--python``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "oracle"

# kept from the oracle's JSON, in this order
KEEP = (
    "vllm_version", "route", "architecture", "tp", "dtype", "max_model_len",
    "max_model_len_changed_by_autofit", "max_num_seqs", "max_num_batched_tokens",
    "model_runner", "attention_backends", "cache_config_block_size", "mamba_block_size",
    "mamba_page_size_padded", "mamba_cache_mode", "kv_cache_layout", "kv_cache_dtype",
    "available_bytes", "num_layers_with_kv_spec", "layer_specs", "groups", "num_blocks",
    "kv_cache_size_tokens", "max_concurrency", "log_line",
)
# architectures the oracle cannot build on its CPU host without a narrowly scoped emulation
# shim: the shim script wraps the oracle (same arguments) and records what it emulated in the
# fixture's assumptions; the fixture names it in "emulation_shim" (each script says why the
# figures are unchanged)
SHIMS = {"FlintForCausalLM": "shims_flint.py", "Qwen4ExpForCausalLM": "shims_qwen4_exp.py"}
SHIMS.update({"DeepseekVLV2ForCausalLM": "shims_deepseek_vl2.py", "DeepseekOCRForCausalLM": "shims_deepseek_vl2.py"})
SHIMS.update({"Qwen4ExpForConditionalGeneration": "shims_qwen4_exp.py"})  # Qwen4Exp text model under the Qwen3 ViT
SHIMS.update({a: "shims_remote_standins.py" for a in ("InternVLChatModel", "MiniCPMV", "Phi4MMForCausalLM")})  # remote-code configs
SHIMS.update({"KimiK3ForConditionalGeneration": "shims_kimi_k3.py"})  # the tower's host time_weight buffer moved as on a GPU
SHIMS.update({"Glm5NextForCausalLM": "shims_glm5next.py"})  # FlashKDA extension stand-in (GLM-5.3-Flash)
SHIMS.update({"Step5ForCausalLM": "shims_step5.py"})  # flashinfer stand-in for the DSA adapter
SHIMS.update({"Gemma3nForConditionalGeneration": "shims_gemma3n.py"})  # timm for the MobileNet-V5 tower
SHIMS.update({"BloomForCausalLM": "shims_alibi.py", "Step1ForCausalLM": "shims_alibi.py"})  # ALiBi slopes on CPU (.tolist())
SHIMS.update({"MiDashengLMModel": "shims_torchaudio.py"})  # torchaudio stand-in (absent from the oracle venv)
SHIMS.update({"FunASRForConditionalGeneration": "shims_torchaudio.py"})  # its processor imports torchaudio.compliance.kaldi
SHIMS.update({"ApertusForCausalLM": "shims_xielu.py"})  # xIELU scalars read on CPU (.item())
SHIMS.update({"DeciLMForCausalLM": "shims_decilm.py"})  # stand-in for the remote DeciLMConfig (nemotron-nas)
SHIMS.update({"NemotronHPuzzleForCausalLM": "shims_nemotron_h_puzzle.py"})  # stand-in for the remote NemotronHPuzzleConfig
SHIMS.update({"LlamaNemotronVLModel": "shims_nemotron_vl.py"})  # stand-in for the remote LlamaNemotronVLConfig
# stand-in for the remote InternS1ProConfig, FoPE's inv_freq selection on CPU, and shims_pwal_meta.py (FP8)
SHIMS.update({"InternS1ProForConditionalGeneration": "shims_interns1_pro.py"})
SHIMS.update({"H2OVLChatModel": "shims_h2ovl.py"})  # stand-in for the remote H2OVLChatConfig (h2ovl_chat)
# process_weights_after_loading to the end on meta (compressed-tensors KV scales .item(), Machete prepack)
SHIMS.update({a: "shims_pwal_meta.py" for a in ("Exaone4ForCausalLM", "LlamaForCausalLM", "Qwen2ForCausalLM",
                                                "LagunaForCausalLM")})
# ... and BaseKVCacheMethod's q/k/v/prob_scale placeholder tests (FP8 checkpoints: bool() of a meta tensor)
SHIMS.update({a: "shims_pwal_meta.py" for a in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "MiniMaxM2ForCausalLM",
                                                "MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM",
                                                "DeepseekV3BidirectionalModel")})
SHIMS.update({"DotsOCRForCausalLM": "shims_dots_ocr.py"})  # vLLM's own DotsOCRConfig for the remote dots_ocr type
SHIMS.update({"OpenCUAForConditionalGeneration": "shims_opencua.py"})  # stand-in for the remote OpenCUAConfig (opencua)
SHIMS.update({"MiniCPMO": "shims_minicpmo.py"})  # stand-in for the remote MiniCPMOConfig, resampler pos_embed moved as after loading
SHIMS.update({a: "shims_ovis2_5.py" for a in ("Ovis2_5", "Ovis2_6ForCausalLM", "Ovis2_6_MoeForCausalLM")})  # stand-in for the remote Ovis2_5_Config
SHIMS.update({a: "shims_nano_nemotron_vl.py" for a in ("NemotronH_Nano_VL_V2", "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3")})  # stand-in for the remote NemotronH_Nano_VL_V2_Config, tokenizer stand-in
SHIMS.update({a: "shims_keye.py" for a in ("KeyeForConditionalGeneration", "KeyeVL1_5ForConditionalGeneration")})  # stand-in for the remote KeyeConfig
SHIMS.update({"IsaacForConditionalGeneration": "shims_isaac.py"})  # the image token id without a tokenizer
SHIMS.update({a: "shims_remote_standins.py" for a in ("NVLM_D", "SkyworkR1VChatModel")})  # relabelled InternVL chat-format configs
SHIMS.update({"GteNewModel": "shims_remote_standins.py"})  # stand-in for the remote NewConfig (model_type new)
SHIMS.update({"MoonshotKimiaForCausalLM": "shims_kimi_audio.py"})  # stand-in for the remote moonshot_kimia config, the checkpoint's whisper-large-v3 sub-config
SHIMS.update({"VoxtralRealtimeGeneration": "shims_voxtral_realtime.py"})  # the streaming delay count its __init__ reads from the Mistral tokenizer
SHIMS.update({"Ernie4_5_VLMoeForConditionalGeneration": "shims_ernie45_vl.py"})  # stand-in for the remote Ernie4_5_VLMoEConfig (ernie4_5_moe_vl)
SHIMS.update({"MolmoForCausalLM": "shims_molmo.py"})  # stand-in for the remote MolmoConfig (molmo)
SHIMS.update({"Molmo2ForConditionalGeneration": "shims_molmo2.py"})  # stand-in for the remote Molmo2Config (molmo2)
SHIMS.update({"FireRedASR2ForConditionalGeneration": "shims_fireredasr2.py"})  # RelPositionalEncoding's .item() while building its table
SHIMS.update({"MossAudioModel": "shims_moss_audio.py"})  # vLLM's own MossAudioConfig for the remote moss_audio type
SHIMS.update({"StepVLForConditionalGeneration": "shims_step_vl.py", "Step3p7ForConditionalGeneration": "shims_step_vl.py", "Step5ForConditionalGeneration": "shims_step5.py"})  # stand-ins for the remote StepRoboticsConfig / Step3p7Config; Step5 text: flashinfer stand-in
SHIMS.update({"KananaVForConditionalGeneration": "shims_kanana_v.py"})  # stand-in for the remote KananaVConfig, timm for the C-Abstractor
SHIMS.update({"LlavaOnevision2ForConditionalGeneration": "shims_llava_onevision2.py"})  # stand-in for the remote LlavaOnevision2Config
SHIMS.update({"MuseSparkForConditionalGeneration": "shims_muse_spark.py"})  # the fused QK-norm support check without the cutlass DSL
SHIMS.update({"DeepseekOCR2ForCausalLM": "shims_deepseek_ocr2.py"})  # tokenizer stand-in (shims_deepseek_vl2.py's) for deepseek_ocr2
SHIMS.update({"UnlimitedOCRForCausalLM": "shims_deepseek_vl2.py"})  # DeepseekOCRForCausalLM.__init__: the deepseek_ocr tokenizer stand-in
SHIMS.update({"OpenVLAForActionPrediction": "shims_openvla.py"})  # timm for the DINOv2 + SigLIP featurizers
SHIMS.update({"Glm5NextForConditionalGeneration": "shims_glm5next.py"})  # FlashKDA extension stand-in (GLM-5.3-Flash with its vision tower)
SHIMS.update({"OpenPanguVLForConditionalGeneration": "shims_openpangu_vl.py"})  # stand-ins for the remote openpangu_vl config and processor
SHIMS.update({"MiMoV2OmniForCausalLM": "shims_pwal_meta.py"})  # its MiMo-V2-Flash FP8 decoder: BaseKVCacheMethod's q/k/v/prob_scale placeholder tests on meta
SHIMS.update({"Mistral3ForConditionalGeneration": "shims_mistral3.py"})  # the checkpoint's lm_head listing, ModelConfig.maybe_untie_word_embeddings as on a real load format
SHIMS.update({"PixtralForConditionalGeneration": "shims_pixtral.py"})  # model_type pixtral read as vLLM's params.json remap builds it, not transformers' PixtralVisionConfig
SHIMS.update({"DeepseekV41ForCausalLM": "shims_deepseek_v41.py"})  # Engram tables in host memory (cpu_offload default), Marlin repack fake kernel
SHIMS.update({"Dots3NoteForCausalLM": "shims_dots3_note.py"})  # added_tokens.json (the <|imgpad|> id) the oracle lacks
SHIMS.update({"CohereAsrForConditionalGeneration": "shims_cohere_asr.py"})  # torchaudio stand-in; ConvSubsampling sized on CPU (int() of a tensor)
SHIMS.update({"NemotronParseForConditionalGeneration": "shims_nemotron_parse.py"})  # stand-in for the remote NemotronParseConfig
SHIMS.update({"RadioMBartPrefixForCausalLM": "shims_nemotron_parse.py"})  # stand-in for the remote NemotronParseConfig (Parse 3.5 flags read as attributes)
WEIGHT_KEYS = ("parameters_bytes", "buffers_bytes", "total_bytes", "by_dtype",
               "parameters_by_dtype", "buffers_by_dtype", "host_tensors_bytes", "num_tensors",
               "stage", "largest")


def oracle_flags(case: dict, defaults: dict) -> list[str]:
    flags = ["--available-bytes", str(case.get("available_bytes", defaults["available_bytes"]))]
    max_len = case.get("max_model_len", defaults.get("max_model_len"))
    if max_len is not None:
        flags += ["--max-model-len", str(max_len)]
    flags += ["--tp", str(case["tp"])]
    for key in ("kv_cache_dtype", "dtype", "block_size", "max_num_seqs", "max_num_batched_tokens", "attention_backend"):
        if key in case:
            flags += ["--" + key.replace("_", "-"), str(case[key])]
    flags += ["--usage-context", case.get("usage_context", defaults.get("usage_context", "serve"))]
    return flags


def compact(raw: dict) -> dict:
    out = {k: raw[k] for k in KEEP if k in raw}
    w = raw.get("weights") or {}
    weights = {k: w[k] for k in WEIGHT_KEYS if k in w}
    other = w.get("other_device_tensors") or {}
    weights["other_device_tensors_bytes"] = other.get("bytes", 0)
    if other.get("by_dtype"):
        weights["other_device_tensors_by_dtype"] = other["by_dtype"]
    pwal = w.get("process_weights_after_loading") or {}
    if pwal.get("cuda_ops_called_as_noops"):
        weights["cuda_ops_called_as_noops"] = pwal["cuda_ops_called_as_noops"]
    if pwal.get("error"):
        weights["process_weights_after_loading_error"] = str(pwal["error"])[:500]
    if w.get("construction"):
        weights["construction"] = w["construction"]
    out["weights"] = weights
    tensors = raw.get("kv_cache_tensors") or []
    backing = sum(int(t.get("backing_size_bytes", 0)) for t in tensors)
    out["kv_cache_tensors_count"] = len(tensors)
    out["kv_cache_tensors_bytes"] = backing
    # bytes of one pool block across every tensor (= every layer) of the rank
    nb = raw.get("num_blocks") or 0
    out["pool_block_bytes"] = backing // nb if nb and backing % nb == 0 else (backing / nb if nb else None)
    out["assumptions"] = raw.get("assumptions", [])
    out["caveats"] = [a for a in out["assumptions"] if "CAVEAT" in a]
    return out


def run_case(case: dict, defaults: dict, python: str, oracle: Path, timeout: int,
             raw_dir: Path | None = None) -> dict:
    cfg = ROOT / case["config"]
    flags = oracle_flags(case, defaults)
    shim = SHIMS.get(case.get("architecture") or "")
    cmd = ([python, str(HERE / shim), str(oracle)] if shim else [python, str(oracle)]) + [str(cfg)] + flags
    shown = "python <vllm-oracle>/oracle.py " + " ".join(shlex.quote(x) for x in [case["config"]] + flags)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        try:
            raw = json.loads(p.stdout)
        except json.JSONDecodeError:
            raw = {"error": "no JSON output", "traceback_tail": p.stderr[-3000:]}
    except subprocess.TimeoutExpired:
        raw = {"error": f"timeout after {timeout}s"}
    record = {
        "id": case["id"],
        "source": "vllm-oracle (shared/tools/vllm-oracle/oracle.py), vLLM 0.33.0 on the meta device",
        "command": shown,
        "regenerate": "python bench/oracle/make_fixtures.py --only " + case["id"],
        "config": case["config"],
        "config_provenance": case.get("provenance", ""),
        "architecture_expected": case.get("architecture"),
        "case_note": case.get("note", ""),
    }
    if shim:
        record["emulation_shim"] = f"bench/oracle/{shim} (wraps the oracle command above)"
    if raw_dir is not None:
        (raw_dir / f"{case['id']}.json").write_text(json.dumps(raw, indent=1) + "\n")
    if "error" in raw:
        record["error"] = str(raw["error"])[:2000]
        record["traceback_tail"] = str(raw.get("traceback_tail", ""))[-3000:]
        record["assumptions"] = raw.get("assumptions", [])
    else:
        record["oracle"] = compact(raw)
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(HERE / "cases.json"))
    ap.add_argument("--oracle", default=os.environ.get("VLLM_ORACLE", str(ROOT.parent / "shared/tools/vllm-oracle/oracle.py")))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--raw-dir", default=None, help="also keep the oracle's whole JSON here (not committed)")
    ap.add_argument("--missing", action="store_true", help="only cases without a fixture yet")
    a = ap.parse_args(argv)
    spec = json.loads(Path(a.cases).read_text())
    cases = [c for c in spec["cases"] if not a.only or c["id"] in a.only]
    if a.missing:
        cases = [c for c in cases if not (FIXTURES / f"{c['id']}.json").exists()]
    FIXTURES.mkdir(parents=True, exist_ok=True)
    oracle = Path(a.oracle).resolve()
    raw_dir = Path(a.raw_dir) if a.raw_dir else None
    if raw_dir is not None:
        raw_dir.mkdir(parents=True, exist_ok=True)

    def one(case: dict) -> str:
        rec = run_case(case, spec, a.python, oracle, a.timeout, raw_dir)
        (FIXTURES / f"{case['id']}.json").write_text(json.dumps(rec, indent=1) + "\n")
        if "error" in rec:
            return f"{case['id']:40s} ERROR {rec['error'][:150]}"
        o = rec["oracle"]
        return (f"{case['id']:40s} blocks={o['num_blocks']} tokens={o['kv_cache_size_tokens']} "
                f"conc={o['max_concurrency']:.2f} weights={o['weights'].get('total_bytes')}")

    with ThreadPoolExecutor(max(1, a.jobs)) as ex:
        for line in ex.map(one, cases):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
