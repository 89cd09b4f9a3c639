"""Write bench/oracle/cases.json from the configs the oracle fixtures rest on.

Every bundled registry config (registry/models/) and every oracle test config
(tests/fixtures/oracle/configs/) whose ``architectures[0]`` is one of vLLM 0.33.0's
text-generation architectures (bench/oracle/architectures.json) gets two cases: TP 1 and
one TP > 1.  The TP > 1 is 8 for models of 100 B parameters and more (a rough count from
the config), else 2, lowered to the largest of 8/4/2 that divides the attention heads.

    python bench/oracle/build_cases.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
AVAILABLE_BYTES = 42949672960  # 40 GiB of KV cache per rank
MAX_MODEL_LEN = 32768
# per-case overrides: (config stem, tp) -> case keys.  Command R v01's cache (64 KV heads, 40 layers:
# 1.25 MiB a token at TP 1) needs 40 GiB for one 32,768-token request, more than the available
# bytes, and vLLM refuses it; a 16,384-token length keeps the same bytes and gives blocks.
OVERRIDES = {("CohereForAI--c4ai-command-r-v01.ome-trimmed", 1): {"max_model_len": 16384}}
# Step1 (vllm/model_executor/models/step1.py::StepAttention) asks for use_alibi_sqrt, which only
# TRITON_ATTN supports (vllm/model_executor/layers/attention/attention.py::Attention raises
# "use_alibi_sqrt is not supported by backend FLASH_ATTN" for the default backend)
OVERRIDES.update({("stepfun-ai--Step1Config-defaults.synthetic.oracle-llama", tp): {"attention_backend": "TRITON_ATTN"}
                  for tp in (1, 2)})
# Rnj1 (vllm/model_executor/models/rnj1.py): its chunked_attention layers pass chunk_lookback=1, which only
# TRITON_ATTN runs (attention.py::Attention asserts "Chunked attention with lookback requires the Triton backend")
OVERRIDES.update({("EssentialAI--rnj1-gemma3-defaults.synthetic", tp): {"attention_backend": "TRITON_ATTN"}
                  for tp in (1, 2)})
# multimodal checkpoints checked too (vision tower weights, the language model's KV pool), with
# the TPs to run: the families issue 11 names first (Qwen3.5-27B loads its Qwen3-VL tower)
MULTIMODAL = {"Qwen--Qwen3.5-27B": (1, 2, 4), "Qwen--Qwen3-VL-30B-A3B-Instruct.transcribed-trimmed": (1, 2),
              "OpenGVLab--InternVL3-1B-hf.derived": (1, 2)}
# GLM-4.xV, Kimi-VL, DeepSeek-VL2/OCR (vmemplan/models/glm4v.py, kimi_vl.py, deepseek_vl2.py): TP 4 for GLM-4.5V,
# whose 12 vision heads TP 8 does not divide
MULTIMODAL.update({"zai-org--GLM-4.1V-9B-Thinking.synthetic": (1, 2), "zai-org--GLM-4.5V.transcribed": (1, 4),
                   "moonshotai--Kimi-VL-A3B-Instruct.synthetic": (1, 2), "deepseek-ai--deepseek-vl2-tiny.ome": (1, 2),
                   "deepseek-ai--DeepSeek-OCR.transcribed": (1, 2)})
# LLaVA-NeXT (vmemplan/models/llava_next.py): in _EMBEDDING_MODELS too, but served as a generator by default
MULTIMODAL.update({"llava-hf--llava-v1.6-mistral-7b-hf.transcribed": (1, 2)})
# Phi-3-vision (vmemplan/models/phi3v.py): the phi3_v config is remote code; its oracle copy reads as Phi3Config
MULTIMODAL.update({"microsoft--Phi-3-vision-128k-instruct.transcribed.oracle-phi3": (1, 2)})
# Gemma-3n (vmemplan/models/gemma3n_mm.py): the oracle copy without activation sparsity (GeluAndMulSparse
# calls .item() on the meta device; see SOURCES.md)
MULTIMODAL.update({"google--gemma-3n-E2B.oracle-nosparsity": (1, 2)})
# LLaVA-NeXT-Video, LLaVA-OneVision (vmemplan/models/llava_video.py): CLIP / SigLIP towers, replicated projectors
MULTIMODAL.update({"llava-hf--LLaVA-NeXT-Video-7B-hf.transcribed": (1, 2),
                   "llava-hf--LlavaOnevisionConfig-defaults.synthetic": (1, 2),
                   "ibm-granite--granite-vision-4.1.transcribed-trimmed": (1, 2),
                   "h2oai--H2OVL-on-InternVL3-1B.derived.synthetic": (1, 2)})
# LightOnOCR, Idefics3, Cohere2-Vision, Kimi-K2.5 (vmemplan/models/lightonocr.py, idefics3.py, cohere2_vision.py,
# kimi_k25.py)
MULTIMODAL.update({"lightonai--LightOnOCR-2-1B": (1, 2), "HuggingFaceM4--Idefics3Config-defaults.synthetic": (1, 2),
                   "CohereLabs--command-a-vision-07-2025.derived": (1, 8), "nvidia--Kimi-K2.5-NVFP4": (1, 8),
                   "HuggingFaceTB--SmolVLM-256M-Instruct.transcribed-trimmed": (1,)})  # 9 heads: TP 3/9 only, and vLLM
# refuses both (the 64-padded vocabulary 49,280 is not divisible by 3: VocabParallelEmbedding)
# Qwen3-VL kin (vmemplan/models/qwen3_vl_kin.py, interns1_pro.py, interns2.py)
MULTIMODAL.update({"nvidia--Cosmos3-Nano.transcribed-trimmed": (1, 2),
                   "nvidia--Alpamayo2-Super-tiny-test.synthetic": (1, 2),
                   "internlm--Intern-S2-Preview.derived-Qwen3.5-35B-A3B": (1, 2), "internlm--Intern-S1-Pro": (1, 2),
                   "internlm--Intern-S2-Mobius.derived-Qwen3.5-35B-A3B.synthetic": (1, 2)})
# LLaVA-1.5-style Llava with a SigLIP tower (vmemplan/models/multimodal.py::Llava): LLaVA-Interleave
MULTIMODAL.update({"llava-hf--llava-interleave-qwen-0.5b-hf.derived": (1, 2)})
# MiniCPM-V 4.6 / 4.7 / MiniCPM-OCR, Qwen4Exp-VL, Kimi-K3 (vmemplan/models/minicpmv4_6.py, qwen4_exp_vl.py, kimi_k3.py)
MULTIMODAL.update({"openbmb--MiniCPM-V-4.6": (1, 2), "openbmb--MiniCPMV4_7Config-defaults.synthetic": (1, 2),
                   "openbmb--MiniCPM-OCR-MiniCPMV4_6Config-defaults.synthetic": (1, 2),
                   "Qwen--Qwen3.8-Flash-Next.vl-4-layers.derived.synthetic": (1, 2),
                   "moonshotai--Kimi-K3.derived-Kimi-Linear-48B.synthetic": (1, 2)})
# PaliGemma (vmemplan/models/paligemma.py): SigLIP + linear projector over Gemma / Gemma-2
MULTIMODAL.update({"google--paligemma-3b-pt-224.transcribed": (1, 2)})
MULTIMODAL.update({"google--paligemma2-on-gemma-2-9b.derived": (1, 2)})  # the Gemma-2 decoder path
# Qwen audio models (vmemplan/models/qwen_audio.py: Whisper-style audio towers over Qwen2 / Qwen3)
MULTIMODAL.update({"Qwen--Qwen2-Audio-7B-Instruct.transcribed": (1, 2), "Qwen--Qwen2.5-Omni-3B.transcribed-trimmed": (1, 2),
                   "Qwen--Qwen3-ASR-1.7B.transcribed-trimmed": (1, 2)})
# SmolVLM (registry/architectures/multimodal_siglip.yaml: Idefics3 under another name)
MULTIMODAL.update({"HuggingFaceTB--SmolVLMConfig-defaults.synthetic": (1, 2)})
# Eagle 2.5-VL (vmemplan/models/eagle2_5_vl.py): the oracle copy reads as LlavaConfig (eagle_2_5_vl is remote code)
MULTIMODAL.update({"nvidia--Eagle2_5_VLConfig-defaults.synthetic.oracle-llava": (1, 2)})
# Llama Nemotron VL embedding (vmemplan/models/nemotron_vl_embed.py): pooling runner, SigLIP + bidirectional Llama
MULTIMODAL.update({"nvidia--LlamaNemotronVL-on-Llama-3.2-1B.derived.synthetic": (1, 2)})
# the bundled checkpoints of the families issue 11 names first, with their vision towers built (vLLM's
# default --limit-mm-per-prompt): Qwen2.5-VL, Gemma-3, Gemma-4, Llama-4 Scout (TP 8), Mistral-3, Qwen3.5-MoE
MULTIMODAL.update({"Qwen--Qwen2.5-VL-7B-Instruct": (1, 2), "google--gemma-3-27b-it": (1, 2),
                   "google--gemma-4-26B-A4B": (1, 2), "meta-llama--Llama-4-Scout-17B-16E-Instruct": (1, 8),
                   "mistralai--Mistral-Small-3.1-24B-Instruct-2503": (1, 2), "Qwen--Qwen3.5-35B-A3B": (1, 2)})
MULTIMODAL.update({"Qwen--Qwen2-VL-7B-Instruct.synthetic": (1, 2), "Qwen--Qwen3-VL-8B-Instruct.synthetic": (1, 2)})
# remote-code configs through bench/oracle/shims_remote_standins.py: InternVL chat format, MiniCPM-V 2.6, Phi-4-MM
MULTIMODAL.update({"OpenGVLab--InternVL3-1B.transcribed": (1, 2), "openbmb--MiniCPM-V-2_6.synthetic": (1, 2),
                   "microsoft--Phi-4-multimodal-instruct.transcribed": (1, 2)})
# vLLM maps Qwen2_5OmniForConditionalGeneration to the same thinker class as Qwen2_5OmniModel (registry.py)
MULTIMODAL.update({"Qwen--Qwen2.5-Omni-3B.as-Qwen2_5OmniForConditionalGeneration.derived": (1, 2)})
MULTIMODAL.update({"fixie-ai--ultravox-v0_5-llama-3_2-1b.derived": (1, 2)})  # UltravoxModel (vmemplan/models/ultravox.py)
MULTIMODAL.update({"Qwen--Qwen3-Omni-30B-A3B-Instruct.transcribed-trimmed": (1, 2)})  # Qwen3OmniMoeForConditionalGeneration (vmemplan/models/qwen3_omni.py)
MULTIMODAL.update({"Qwen--Qwen3-ASR-1.7B.as-Realtime.derived": (1, 2)})  # Qwen3ASRRealtimeGeneration (vmemplan/models/qwen3_asr_realtime.py)
MULTIMODAL.update({"openbmb--MiniCPM-o-2_6.derived.synthetic": (1, 2)})  # MiniCPMO (vmemplan/models/minicpmo.py; oracle via shims_minicpmo.py)
MULTIMODAL.update({"mistralai--Voxtral-Mini-3B-2507.vllm-mistral-remap.synthetic": (1, 2)})  # VoxtralForConditionalGeneration (vmemplan/models/voxtral.py)
MULTIMODAL.update({"nvidia--audio-flamingo-3-hf.derived-Qwen2.5-7B.synthetic": (1, 2)})  # AudioFlamingo3ForConditionalGeneration (vmemplan/models/audioflamingo3.py)
MULTIMODAL.update({"zai-org--GlmAsrConfig-defaults.synthetic": (1, 2)})  # GlmAsrForConditionalGeneration (vmemplan/models/glmasr.py)
MULTIMODAL.update({"internlm--Intern-S1-mini.synthetic.oracle-internvl": (1, 2)})  # InternS1ForConditionalGeneration (vmemplan/models/interns1.py)
MULTIMODAL.update({"baidu--Qianfan-OCR.synthetic": (1, 2)})  # QianfanOCRForConditionalGeneration (vmemplan/models/qianfan_ocr.py)
MULTIMODAL.update({"Open-Bee--Bee-8B.synthetic.oracle-llava_onevision": (1, 2)})  # BeeForConditionalGeneration (vmemplan/models/bee.py)
MULTIMODAL.update({"YannQi--R-4B.synthetic.oracle-llava_onevision": (1, 2)})  # RForConditionalGeneration (vmemplan/models/bee.py)
MULTIMODAL.update({"THUDM--glm-4v-9b.derived.synthetic": (1, 2)})  # GLM4VForCausalLM (vmemplan/models/glm4v_eva.py)
MULTIMODAL.update({"mispeech--MiDashengLMConfig-on-Qwen2.5-7B.synthetic": (1, 2)})  # MiDashengLMModel (vmemplan/models/midashenglm.py)
MULTIMODAL.update({"rednote-hilab--dots.ocr.transcribed": (1, 2)})  # DotsOCRForCausalLM (vmemplan/models/dots_ocr.py)
MULTIMODAL.update({"PaddlePaddle--PaddleOCR-VL.synthetic": (1, 2)})  # PaddleOCRVLForConditionalGeneration (vmemplan/models/paddleocr_vl.py)
MULTIMODAL.update({"AIDC-AI--Ovis2.5-9B": (1, 2)})  # Ovis2_5 (vmemplan/models/ovis2_5.py)
MULTIMODAL.update({"nvidia--NVIDIA-Nemotron-Nano-12B-v2-VL.synthetic": (1, 2)})  # NemotronH_Nano_VL_V2 (vmemplan/models/nano_nemotron_vl.py)
MULTIMODAL.update({"nvidia--Nemotron-Nano-Omni-V3-30B-A3B.synthetic": (1, 2)})  # NemotronH_Nano_Omni_Reasoning_V3 (vmemplan/models/nano_nemotron_vl.py)
MULTIMODAL.update({"FunAudioLLM--Fun-ASR-Nano-2512.derived.synthetic": (1, 2)})  # FunASRForConditionalGeneration (vmemplan/models/funasr.py)
MULTIMODAL.update({"Kwai-Keye--Keye-VL-8B-Preview.synthetic": (1, 2), "Kwai-Keye--Keye-VL-1_5-8B.synthetic": (1, 2)})  # KeyeForConditionalGeneration, KeyeVL1_5ForConditionalGeneration (vmemplan/models/keye.py; oracle via shims_keye.py)
MULTIMODAL.update({"xlangai--OpenCUA-7B.derived-Qwen2.5-VL-7B.synthetic": (1, 2)})  # OpenCUAForConditionalGeneration (vmemplan/models/opencua.py)
MULTIMODAL.update({"zai-org--GLM-OCR.transcribed": (1, 2)})  # GlmOcrForConditionalGeneration (vmemplan/models/glm_ocr.py)
MULTIMODAL.update({"AIDC-AI--Ovis2.6-30B-A3B.derived.synthetic": (1, 2)})  # Ovis2_6_MoeForCausalLM (vmemplan/models/ovis2_5.py)
MULTIMODAL.update({"google--gemma-4-E2B-it.assembled.synthetic": (1, 2)})  # Gemma4ForConditionalGeneration + audio tower (vmemplan/models/gemma4_audio.py)
MULTIMODAL.update({"AIDC-AI--Ovis2.6-on-Ovis2.5-9B.derived.synthetic": (1, 2)})  # Ovis2_6ForCausalLM (vmemplan/models/ovis2_5.py)
MULTIMODAL.update({"PerceptronAI--Isaac-on-Qwen3-8B.derived.synthetic": (1, 2)})  # IsaacForConditionalGeneration (vmemplan/models/isaac.py; oracle via shims_isaac.py)
MULTIMODAL.update({"LGAI-EXAONE--EXAONE-4.5-33B.transcribed-trimmed": (1, 2)})  # Exaone4_5_ForConditionalGeneration (vmemplan/models/exaone4_5.py)
MULTIMODAL.update({"AIDC-AI--Ovis-aimv2-on-Qwen2.5-7B.synthetic": (1, 2)})  # Ovis (vmemplan/models/ovis.py)
MULTIMODAL.update({"LiquidAI--Lfm2VlConfig-on-LFM2.5-1.2B.derived.synthetic": (1, 2)})  # Lfm2VlForConditionalGeneration (vmemplan/models/lfm2_vl.py)
MULTIMODAL.update({"microsoft--Phi4ForCausalLMV-on-phi-4.derived.synthetic.oracle-phi3": (1, 2)})  # Phi4ForCausalLMV (vmemplan/models/phi4siglip.py)
# other names of planned classes, on derived configs (vLLM 0.33 registry.py maps them to a class already checked):
# Nemotron Omni V3 (NemotronH_Nano_VL_V2 class), NVLM-D and Skywork-R1V (InternVL chat format kin)
MULTIMODAL.update({"nvidia--Nemotron-Nano-Omni-V3-30B-A3B.as-NemotronH_Omni_Reasoning_V3.derived": (1, 2),
                   "nvidia--Nemotron-Nano-Omni-V3-30B-A3B.as-NemotronH_Super_Omni_Reasoning_V3.derived": (1, 2),
                   "OpenGVLab--InternVL3-1B.as-NVLM_D.derived": (1, 2),
                   "OpenGVLab--InternVL3-1B.as-SkyworkR1VChatModel.derived": (1, 2)})
MULTIMODAL.update({"ibm-granite--granite-4.0-1b-speech.transcribed": (1, 2)})  # GraniteSpeechForConditionalGeneration (vmemplan/models/granite_speech.py)
MULTIMODAL.update({"ibm-granite--granite-speech-4.1-2b-plus.derived": (1, 2)})  # GraniteSpeechPlusForConditionalGeneration (vmemplan/models/granite_speech.py)
MULTIMODAL.update({"moonshotai--Kimi-Audio-7B-Instruct.derived": (1, 2)})  # MoonshotKimiaForCausalLM (vmemplan/models/kimi_audio.py)
MULTIMODAL.update({"mistralai--Voxtral-Mini-4B-Realtime-2602.vllm-mistral-remap.synthetic": (1, 2)})  # VoxtralRealtimeGeneration (vmemplan/models/voxtral.py)
MULTIMODAL.update({"baidu--ERNIE-4.5-VL-28B-A3B-PT.derived": (1, 2)})  # Ernie4_5_VLMoeForConditionalGeneration (vmemplan/models/ernie45_vl.py; oracle via shims_ernie45_vl.py)
MULTIMODAL.update({"allenai--Molmo-7B-D-0924.derived": (1, 2)})  # MolmoForCausalLM (vmemplan/models/molmo.py; oracle via shims_molmo.py)
MULTIMODAL.update({"allenai--Molmo2-ER.derived": (1, 2)})  # Molmo2ForConditionalGeneration (vmemplan/models/molmo2.py; oracle via shims_molmo2.py)
MULTIMODAL.update({"FireRedTeam--FireRedASR2-LLM.derived-Qwen2.5-7B": (1, 2)})  # FireRedASR2ForConditionalGeneration (vmemplan/models/fireredasr2.py)
MULTIMODAL.update({"FunAudioLLM--Fun-Audio-Chat-8B.transcribed": (1, 2)})  # FunAudioChatForConditionalGeneration (vmemplan/models/funaudiochat.py)
MULTIMODAL.update({"OpenMOSS--MossAudioConfig-on-Qwen3-8B.derived.synthetic": (1, 2)})  # MossAudioModel (vmemplan/models/moss_audio.py)
MULTIMODAL.update({"OpenMOSS--MossTranscribeDiarizeConfig-defaults.synthetic": (1, 2)})  # MossTranscribeDiarizeForConditionalGeneration (vmemplan/models/moss_transcribe_diarize.py)
MULTIMODAL.update({"stepfun-ai--step3-defaults.synthetic": (1, 2)})  # Step3VLForConditionalGeneration (vmemplan/models/step3_vl.py)
MULTIMODAL.update({"stepfun-ai--Step3-VL-10B-on-Qwen3-8B.derived": (1, 2)})  # StepVLForConditionalGeneration (vmemplan/models/step_vl.py; oracle via shims_step_vl.py)
MULTIMODAL.update({"stepfun-ai--Step3p7-defaults.synthetic": (1, 8)})  # Step3p7ForConditionalGeneration (vmemplan/models/step_vl.py; oracle via shims_step_vl.py)
MULTIMODAL.update({"stepfun-ai--Step5VL-defaults.synthetic": (1, 2)})  # Step5ForConditionalGeneration (vmemplan/models/step_vl.py; oracle via shims_step5.py)
MULTIMODAL.update({"rhymes-ai--Aria.transcribed": (1, 2)})  # AriaForConditionalGeneration (vmemplan/models/aria.py)
MULTIMODAL.update({"kakaocorp--KananaVConfig-on-Llama-3.2-3B.derived.synthetic": (1, 2)})  # KananaVForConditionalGeneration (vmemplan/models/kanana_v.py; oracle via shims_kanana_v.py)
MULTIMODAL.update({"lmms-lab--LlavaOnevision2Config-on-Qwen3-8B.derived.synthetic": (1, 2)})  # LlavaOnevision2ForConditionalGeneration (vmemplan/models/llava_onevision2.py; oracle via shims_llava_onevision2.py)
MULTIMODAL.update({"ByteDance-Seed--BagelConfig-on-Qwen2.5-7B.derived.synthetic": (1, 2)})  # BagelForConditionalGeneration (vmemplan/models/bagel.py)
MULTIMODAL.update({"meta-models--Muse-Glimmer-30B.synthetic": (1, 2)})  # MuseGlimmerForConditionalGeneration (vmemplan/models/muse_glimmer.py)
MULTIMODAL.update({"google--gemma-4-12B.transcribed": (1, 2)})  # Gemma4UnifiedForConditionalGeneration (vmemplan/models/gemma4_unified.py)
MULTIMODAL.update({"google--diffusiongemma-26B-A4B-it.transcribed-derived": (1, 2)})  # DiffusionGemmaForBlockDiffusion (vmemplan/models/diffusion_gemma.py)
MULTIMODAL.update({"openai--whisper-large-v3.transcribed": (1, 2)})  # WhisperForConditionalGeneration (vmemplan/models/whisper.py)
MULTIMODAL.update({"meta-models--Muse-Spark-Open-816B-A42B.synthetic-trimmed": (1, 2)})  # MuseSparkForConditionalGeneration (vmemplan/models/muse_spark.py)
MULTIMODAL.update({"Salesforce--blip2-opt-2.7b.transcribed": (1, 2)})  # Blip2ForConditionalGeneration (vmemplan/models/blip2.py)
MULTIMODAL.update({"deepseek-ai--DeepSeek-OCR-2.derived": (1, 2)})  # DeepseekOCR2ForCausalLM (vmemplan/models/deepseek_ocr2.py; oracle via shims_deepseek_ocr2.py)
MULTIMODAL.update({"baidu--Unlimited-OCR.derived": (1, 2)})  # UnlimitedOCRForCausalLM (vmemplan/models/unlimited_ocr.py; oracle via shims_deepseek_vl2.py)
MULTIMODAL.update({"openvla--openvla-7b.synthetic": (1, 2)})  # OpenVLAForActionPrediction (vmemplan/models/openvla.py; oracle via shims_openvla.py)
MULTIMODAL.update({"CohereLabs--North-Micro-Vision-Instruct.derived": (1, 2)})  # CohereCompassForConditionalGeneration (vmemplan/models/cohere_compass.py)
MULTIMODAL.update({"inclusionAI--Ling-flash-VL-vllm-test.transcribed": (1, 2)})  # BailingMoeV3VLForConditionalGeneration (vmemplan/models/bailing_moe_v3_vl.py)
MULTIMODAL.update({"nvidia--Cosmos3-Edge.derived": (1, 2)})  # Cosmos3EdgeForConditionalGeneration (vmemplan/models/cosmos3_edge.py)
MULTIMODAL.update({"zai-org--GLM-5.3-Flash-VL-text-8-layers.synthetic": (1, 2)})  # Glm5NextForConditionalGeneration (vmemplan/models/glm5next_vl.py; oracle via shims_glm5next.py)
MULTIMODAL.update({"deepseek-ai--DeepSeek-V4-Flash-Vision-Exp.derived": (1, 8)})  # DeepseekV4ForConditionalGeneration (vmemplan/models/deepseek_v4_vl.py)
MULTIMODAL.update({"FreedomIntelligence--openPangu-VL-on-Embedded-7B-V1.1.synthetic": (1, 2)})  # OpenPanguVLForConditionalGeneration (vmemplan/models/openpangu_vl.py; oracle via shims_openpangu_vl.py)
MULTIMODAL.update({"moondream--moondream3-preview.derived": (1, 2)})  # HfMoondream (vmemplan/models/moondream3.py)
MULTIMODAL.update({"moondream--moondream3-preview.as-Moondream3ForCausalLM.derived": (1, 2)})  # Moondream3ForCausalLM, the same class
MULTIMODAL.update({"XiaomiMiMo--MiMo-V2.5-8L.synthetic": (1, 2)})  # MiMoV2OmniForCausalLM (vmemplan/models/mimo_v2_omni.py)
MULTIMODAL.update({"MiniMaxAI--MiniMax-M3.transcribed-trimmed": (1, 2)})  # MiniMaxM3SparseForConditionalGeneration (vmemplan/models/minimax_m3_vl.py)
MULTIMODAL.update({"mistralai--Pixtral-12B-2409.vllm-mistral-remap.synthetic": (1, 2)})  # PixtralForConditionalGeneration (vmemplan/models/multimodal.py; oracle via shims_pixtral.py)
MULTIMODAL.update({"deepseek-ai--DeepSeek-V4.1-Flash": (1, 8)})  # DeepseekV41ForCausalLM (vmemplan/models/deepseek_v4.py, deepseek_v41_weights.py, deepseek_v4_vision.py; oracle via shims_deepseek_v41.py)
MULTIMODAL.update({"dots-studio--dots3-note-prev.derived": (1, 2)})  # Dots3NoteForCausalLM (vmemplan/models/dots3_note.py; oracle via shims_dots3_note.py)
MULTIMODAL.update({"CohereLabs--cohere-transcribe-03-2026.derived": (1, 2)})  # CohereAsrForConditionalGeneration (vmemplan/models/cohere_asr.py)
MULTIMODAL.update({"nvidia--NVIDIA-Nemotron-Parse-v1.2.derived": (1, 2)})  # NemotronParseForConditionalGeneration (vmemplan/models/nemotron_parse.py; oracle via shims_nemotron_parse.py)
MULTIMODAL.update({"nvidia--Nemotron-3.5-Parse.synthetic": (1, 2)})  # RadioMBartPrefixForCausalLM (vmemplan/models/nemotron_parse.py; oracle via shims_nemotron_parse.py)
MULTIMODAL.update({"mistralai--Mistral-Small-3.1-24B-Instruct-2503.params-remap.derived": (1, 2)})  # the bundled Mistral-Small-3.1 as vLLM reads its params.json (Pixtral)
# embedding (pooling) architectures checked too: vLLM 0.33.0 lists them in _EMBEDDING_MODELS and picks
# --runner pooling for them itself (vllm/config/model.py::_get_default_runner_type), so the oracle needs
# no flag; the TPs to run where the default TP > 1 would not divide the heads (vmemplan/models/pooling_decoders.py)
EMBEDDING = {"LlamaModel", "MistralModel", "Qwen2Model", "Gemma2Model", "Gemma3TextModel", "LlamaBidirectionalModel",
             "VoyageQwen3BidirectionalEmbedModel", "Lfm2BidirectionalModel", "DeepseekV3BidirectionalModel", "JinaEmbeddingsV5Model", "BertModel", "BertForMaskedLM", "BertSpladeSparseEmbeddingModel",
             "RobertaModel", "RobertaForMaskedLM", "XLMRobertaModel", "BgeM3EmbeddingModel", "ModernBertModel",
             "GteModel", "GteNewModel", "NomicBertModel", "CLIPModel", "SiglipModel",
             "ColPaliForRetrieval", "EmbeddingGemma2Model"}
EMBEDDING_TPS = {"google--embeddinggemma-300m.transcribed": (1, 3)}
# skip a file whose twin is a plain copy of the same checkpoint
SKIP_SUFFIXES = (".hf_quant_config.json",)


def _text(cfg: dict) -> dict:
    return cfg.get("text_config") or cfg.get("llm_config") or cfg


def rough_params(cfg: dict) -> float:
    c = _text(cfg)
    h = c.get("hidden_size") or c.get("d_model") or c.get("n_embd") or 0
    n = c.get("num_hidden_layers") or c.get("n_layer") or c.get("num_layers") or 0
    inter = c.get("moe_intermediate_size") or c.get("intermediate_size") or c.get("ffn_hidden_size") or 4 * h
    experts = c.get("n_routed_experts") or c.get("num_experts") or c.get("num_local_experts") or 1
    if isinstance(inter, list):
        inter = max(inter)
    return float(n) * (4 * h * h + 3 * h * inter * max(1, experts))


def heads(cfg: dict) -> int | None:
    c = _text(cfg)
    v = c.get("num_attention_heads") or c.get("n_head") or c.get("num_heads")
    if isinstance(v, list):
        v = min(v)
    return v


def pick_tp(cfg: dict) -> int:
    want = 8 if rough_params(cfg) >= 100e9 else 2
    h = heads(cfg)
    for tp in (8, 4, 2):
        if tp <= want and (h is None or h % tp == 0):
            return tp
    return 2


def case_id(stem: str, tp: int) -> str:
    s = re.sub(r"[^A-Za-z0-9.]+", "-", stem).strip("-")
    return f"{s}.tp{tp}"


def provenance_for(path: Path) -> str:
    if path.parent.name == "models":
        return f"bundled registry config registry/models/{path.name} (see registry/models/provenance.yaml)"
    return f"tests/fixtures/oracle/configs/SOURCES.md row {path.name}"


def main() -> int:
    archs = {a["architecture"] for a in json.loads((HERE / "architectures.json").read_text())["architectures"]}
    files = sorted((ROOT / "registry/models").glob("*.json")) + sorted((ROOT / "tests/fixtures/oracle/configs").glob("*.json"))
    cases = []
    for f in files:
        if f.name.endswith(SKIP_SUFFIXES):
            continue
        cfg = json.loads(f.read_text())
        arch = (cfg.get("architectures") or [None])[0]
        if arch is None and cfg.get("model_type") == "deepseek_vl_v2":
            arch = "DeepseekVLV2ForCausalLM"  # vLLM's DeepseekVLV2Config default (configs/deepseek_vl2.py)
        stem = f.name[:-5]
        if arch not in archs and arch not in EMBEDDING and stem not in MULTIMODAL:
            continue
        rel = f.relative_to(ROOT).as_posix()
        for tp in MULTIMODAL.get(stem, EMBEDDING_TPS.get(stem, (1, pick_tp(cfg)))):
            case = {"id": case_id(stem, tp), "config": rel, "architecture": arch, "tp": tp,
                    "provenance": provenance_for(f)}
            case.update(OVERRIDES.get((stem, tp), {}))
            cases.append(case)
    out = {
        "note": "Generated by bench/oracle/build_cases.py. available_bytes is the KV cache budget "
                "per rank given to the oracle (and to vmemplan as --kv-cache-memory).",
        "available_bytes": AVAILABLE_BYTES,
        "max_model_len": MAX_MODEL_LEN,
        "usage_context": "serve",
        "cases": cases,
    }
    (HERE / "cases.json").write_text(json.dumps(out, indent=1) + "\n")
    print(len(cases), "cases,", len({c["architecture"] for c in cases}), "architectures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
