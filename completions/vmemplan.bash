# vmemplan bash completion: generated from the CLI and the registry by `python -m vmemplan.cli.completions`; do not edit.
# Install: copy to ~/.local/share/bash-completion/completions/vmemplan, or `source` it from ~/.bashrc.

_vmemplan_commands='size gpus models concurrency sweep explain-log'
_vmemplan_root='--version -V --no-color --show-completion --install-completion --help'
_vmemplan_models='ai21labs/Jamba-v0.1 baidu/ERNIE-Image.text_encoder-Mistral3-3B deepseek-ai/DeepSeek-Coder-V2-Lite-Base deepseek-ai/DeepSeek-R1 deepseek-ai/DeepSeek-V3 deepseek-ai/DeepSeek-V3.2 deepseek-ai/DeepSeek-V4-Flash deepseek-ai/DeepSeek-V4-Pro deepseek-ai/DeepSeek-V4.1-Flash google/gemma-2-9b google/gemma-3-1b-it google/gemma-3-27b-it google/gemma-3-27b-pt google/gemma-4-26B-A4B LDCC/Qwen2.5-72B-Instruct-ko-AWQ meta-llama/Llama-3.1-405B meta-llama/Llama-3.1-405B-Instruct meta-llama/Llama-3.1-405B-Instruct-FP8 meta-llama/Llama-3.1-70B meta-llama/Llama-3.1-70B-Instruct meta-llama/Llama-3.1-8B meta-llama/Llama-3.1-8B-Instruct meta-llama/Llama-3.2-1B-Instruct meta-llama/Llama-3.2-3B-Instruct meta-llama/Llama-3.3-70B-Instruct meta-llama/Llama-4-Maverick-17B-128E-Instruct meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8 meta-llama/Llama-4-Scout-17B-16E-Instruct meta-llama/Meta-Llama-3.1-405B meta-llama/Meta-Llama-3.1-405B-Instruct meta-llama/Meta-Llama-3.1-405B-Instruct-FP8 meta-llama/Meta-Llama-3.1-70B meta-llama/Meta-Llama-3.1-70B-Instruct meta-llama/Meta-Llama-3.1-8B meta-llama/Meta-Llama-3.1-8B-Instruct microsoft/Phi-3-mini-128k-instruct microsoft/Phi-3.5-MoE-instruct microsoft/phi-4 MiniMaxAI/MiniMax-M1 MiniMaxAI/MiniMax-M2.5 mistralai/Mistral-7B-v0.1 mistralai/Mistral-Small-24B-Instruct-2501 mistralai/Mistral-Small-3.1-24B-Instruct-2503 mistralai/Mixtral-8x7B-v0.1 moonshotai/Kimi-K2-Instruct moonshotai/Kimi-Linear-48B-A3B-Instruct nvidia/Gemma-4-31B-IT-NVFP4 nvidia/Llama-3.1-70B-Instruct-FP8 nvidia/Nemotron-H-56B-Base-8K nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 openai/gpt-oss-120b openai/gpt-oss-20b PrimeIntellect/INTELLECT-3-Base Qwen/Qwen2.5-72B Qwen/Qwen2.5-7B Qwen/Qwen2.5-VL-7B-Instruct Qwen/Qwen3-235B-A22B Qwen/Qwen3-235B-A22B-FP8 Qwen/Qwen3-30B-A3B Qwen/Qwen3-30B-A3B-FP8 Qwen/Qwen3-32B Qwen/Qwen3-32B-FP8 Qwen/Qwen3-8B Qwen/Qwen3-8B-FP8 Qwen/Qwen3-Next-80B-A3B-Thinking Qwen/Qwen3.5-27B Qwen/Qwen3.5-35B-A3B TheBloke/Llama-2-7B-GPTQ tiiuae/Falcon-H1-0.5B zai-org/GLM-4.5-Air zai-org/GLM-4.7 zai-org/GLM-5'
_vmemplan_v_gpu='3090 4090 5090 a10 a100-40g a100-40g-1g.5gb a100-40g-2g.10gb a100-40g-3g.20gb a100-40g-4g.20gb a100-40g-7g.40gb a100-40g-mig-1g.5gb a100-40g-mig-2g.10gb a100-40g-mig-3g.20gb a100-40g-mig-4g.20gb a100-40g-mig-7g.40gb a100-40g-pcie a100-80g a100-80g-1g.10gb a100-80g-1g.20gb a100-80g-2g.20gb a100-80g-3g.40gb a100-80g-4g.40gb a100-80g-7g.80gb a100-80g-mig-1g.10gb a100-80g-mig-1g.20gb a100-80g-mig-2g.20gb a100-80g-mig-3g.40gb a100-80g-mig-4g.40gb a100-80g-mig-7g.80gb a100-80g-pcie a100-pcie-40g a100-pcie-80g a100-sxm-40g a100-sxm-80g a100-sxm4-40gb a100-sxm4-80gb a10g a40 a6000 a800 a800-80g a800-80g-pcie a800-pcie a800-sxm4-80gb aws-a10g b200 b300 blackwell-ultra dgx-b200 dgx-spark g5 gb10 gb200 gb200-nvl72 gb300 gb300-nvl72 geforce-rtx-3090 geforce-rtx-4090 geforce-rtx-5090 gh200-120gb gh200-144 gh200-144g gh200-480gb gh200-96g gh200-hbm3e h100 h100-1g.10gb h100-1g.20gb h100-2g.20gb h100-3g.40gb h100-4g.40gb h100-7g.80gb h100-80g h100-94g h100-mig-1g.10gb h100-mig-1g.20gb h100-mig-2g.20gb h100-mig-3g.40gb h100-mig-4g.40gb h100-mig-7g.80gb h100-nvl h100-pcie h100-pcie-80g h100-sxm h100-sxm5 h100nvl h20 h20-141g h20-3e h20-96g h200 h200-141g h200-nvl h200-sxm h200nvl h20e h800 h800-80g hgx-b200 hgx-b300 l4 l40 l40-workstation l40s mi300 mi300x mi325x mi350 mi355x rtx-3090 rtx-4090 rtx-5090 rtx-6000-ada rtx-a6000 rtx-pro-6000 rtx-pro-6000-blackwell rtx-pro-6000-maxq rtx-pro-6000-server rtx-pro-6000-ws rtx3090 rtx4090 rtx5090 rtx6000-ada t4 tesla-t4 v100-16g v100-32g v100-sxm2-16gb v100-sxm2-32gb'
_vmemplan_v_kv_cache_dtype='auto bfloat16 float16 fp8 fp8_e4m3 fp8_e5m2 fp8_inc fp8_ds_mla fp8_per_token_head int8_per_token_head nvfp4'
_vmemplan_v_dtype='auto bfloat16 float16 half float32 float'
_vmemplan_v_vary='gpu= tensor-parallel-size= pipeline-parallel-size= gpu-memory-utilization= max-model-len= max-num-seqs= max-num-batched-tokens= block-size= kv-cache-dtype= dtype= enforce-eager= enable-prefix-caching= kv-cache-memory= vllm-version= quantization= data-parallel-size= enable-expert-parallel= decode-context-parallel-size= num-redundant-experts= sampler= speculative-config= limit-mm-per-prompt='
_vmemplan_v_chart='weights_bytes available_kv_cache_bytes kv_cache_tokens max_concurrency num_blocks concurrency_at_request_tokens'

# case-insensitive prefix match of $2 against the words of $1, into COMPREPLY
_vmemplan_match() {
    local w low="${2,,}"
    for w in $1; do
        [[ "${w,,}" == "$low"* ]] && COMPREPLY+=("$w")
    done
}

_vmemplan() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" cmd="" i
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${COMP_WORDS[i]}" in -*) ;; *) cmd="${COMP_WORDS[i]}"; break ;; esac
    done
    if [[ -z "$cmd" ]]; then
        if [[ "$prev" == --show-completion || "$prev" == --install-completion ]]; then
            _vmemplan_match "bash zsh fish" "$cur"; return
        fi
        _vmemplan_match "$_vmemplan_commands $_vmemplan_root" "$cur"; return
    fi
    case "$prev" in
        --gpu) _vmemplan_match "$_vmemplan_v_gpu" "$cur"; return ;;
        --kv-cache-dtype) _vmemplan_match "$_vmemplan_v_kv_cache_dtype" "$cur"; return ;;
        --dtype) _vmemplan_match "$_vmemplan_v_dtype" "$cur"; return ;;
        --vary) _vmemplan_match "$_vmemplan_v_vary" "$cur"; compopt -o nospace 2>/dev/null; return ;;
        --chart) _vmemplan_match "$_vmemplan_v_chart" "$cur"; return ;;
        --format|-f) case "$cmd" in size) _vmemplan_match "table log json tree" "$cur" ;; gpus) _vmemplan_match "table json" "$cur" ;; models) _vmemplan_match "table json" "$cur" ;; concurrency) _vmemplan_match "table json" "$cur" ;; sweep) _vmemplan_match "table csv json" "$cur" ;; explain-log) _vmemplan_match "table json" "$cur" ;; esac; return ;;
        --arrival-rate|--assume-family|--block-size|--chart-x|--config-format|--data-parallel-size|--decode-context-parallel-size|--gate-on|--gpu-memory-in-use|--gpu-memory-utilization|--gpu-total-memory|--image-size|--images-per-request|--kv-cache-memory|--kv-cache-memory-bytes|--lengths|--limit-mm-per-prompt|--max-model-len|--max-num-batched-tokens|--max-num-seqs|--max-points|--min-concurrency|--min-kv-tokens|--mm-encoder-tp-mode|--model|--num-redundant-experts|--output-tokens|--pipeline-parallel-size|--prompt-tokens|--quantization|--request-tokens|--requests|--revision|--runner|--sampler|--seed|--speculative-config|--tensor-parallel-size|--util|--video-frames|--video-size|--videos-per-request|--vllm-version|--what-if|-dcp|-dp|-pp|-q|-tp) return ;;  # a value with no fixed list: the user types it
    esac
    if [[ "$cur" == -* ]]; then
        case "$cmd" in
            size) _vmemplan_match "--gpu --request-tokens --format -f --min-concurrency --min-kv-tokens --gate-on --gpu-memory-utilization --util --max-model-len --max-num-seqs --max-num-batched-tokens --block-size --kv-cache-dtype --dtype --quantization -q --tensor-parallel-size -tp --pipeline-parallel-size -pp --data-parallel-size -dp --num-redundant-experts --decode-context-parallel-size -dcp --kv-cache-memory --kv-cache-memory-bytes --speculative-config --limit-mm-per-prompt --mm-encoder-tp-mode --sampler --runner --assume-family --revision --config-format --vllm-version --gpu-total-memory --gpu-memory-in-use --quiet --no-color --enable-expert-parallel --no-enable-expert-parallel --enable-eplb --no-enable-eplb --enforce-eager --no-enforce-eager --disable-sliding-window --enable-prefix-caching --no-enable-prefix-caching --skip-mm-profiling" "$cur" ;;
            gpus) _vmemplan_match "--format -f --no-color" "$cur" ;;
            models) _vmemplan_match "--format -f --all --no-color" "$cur" ;;
            concurrency) _vmemplan_match "--gpu --lengths --prompt-tokens --output-tokens --images-per-request --image-size --videos-per-request --video-frames --video-size --request-tokens --requests --arrival-rate --seed --min-concurrency --min-kv-tokens --gate-on --format -f --gpu-memory-utilization --util --max-model-len --max-num-seqs --max-num-batched-tokens --block-size --kv-cache-dtype --dtype --quantization -q --tensor-parallel-size -tp --pipeline-parallel-size -pp --data-parallel-size -dp --num-redundant-experts --decode-context-parallel-size -dcp --kv-cache-memory --kv-cache-memory-bytes --speculative-config --limit-mm-per-prompt --mm-encoder-tp-mode --sampler --runner --assume-family --revision --config-format --vllm-version --gpu-total-memory --gpu-memory-in-use --simulate --no-color --enable-expert-parallel --no-enable-expert-parallel --enable-eplb --no-enable-eplb --enforce-eager --no-enforce-eager --disable-sliding-window --enable-prefix-caching --no-enable-prefix-caching --skip-mm-profiling" "$cur" ;;
            sweep) _vmemplan_match "--vary --gpu --request-tokens --min-concurrency --min-kv-tokens --gate-on --chart --chart-x --format -f --max-points --gpu-memory-utilization --util --max-model-len --max-num-seqs --max-num-batched-tokens --block-size --kv-cache-dtype --dtype --quantization -q --tensor-parallel-size -tp --pipeline-parallel-size -pp --data-parallel-size -dp --num-redundant-experts --decode-context-parallel-size -dcp --kv-cache-memory --kv-cache-memory-bytes --speculative-config --limit-mm-per-prompt --mm-encoder-tp-mode --sampler --runner --assume-family --revision --config-format --vllm-version --gpu-total-memory --gpu-memory-in-use --solve --no-color --enable-expert-parallel --no-enable-expert-parallel --enable-eplb --no-enable-eplb --enforce-eager --no-enforce-eager --disable-sliding-window --enable-prefix-caching --no-enable-prefix-caching --skip-mm-profiling" "$cur" ;;
            explain-log) _vmemplan_match "--model --what-if --gpu --vllm-version --format -f --online --check --no-color" "$cur" ;;
        esac
        return
    fi
    case "$cmd" in
        size|concurrency|sweep) _vmemplan_match "$_vmemplan_models" "$cur"; COMPREPLY+=($(compgen -f -- "$cur")) ;;
        explain-log) COMPREPLY=($(compgen -f -- "$cur")) ;;
    esac
}

complete -F _vmemplan vmemplan
