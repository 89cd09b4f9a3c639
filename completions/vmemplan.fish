# vmemplan fish completion: generated from the CLI and the registry by `python -m vmemplan.cli.completions`; do not edit.
# Install: copy to ~/.config/fish/completions/vmemplan.fish (fish matches case-insensitively).

complete -c vmemplan -f
complete -c vmemplan -n __fish_use_subcommand -a 'size gpus models concurrency sweep explain-log'
complete -c vmemplan -n __fish_use_subcommand -l version
complete -c vmemplan -n __fish_use_subcommand -s V
complete -c vmemplan -n __fish_use_subcommand -l no-color
complete -c vmemplan -n __fish_use_subcommand -l show-completion -x -a 'bash zsh fish'
complete -c vmemplan -n __fish_use_subcommand -l install-completion -x -a 'bash zsh fish'
complete -c vmemplan -n __fish_use_subcommand -l help
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l gpu -x -a '3090 4090 5090 a10 a100-40g a100-40g-1g.5gb a100-40g-2g.10gb a100-40g-3g.20gb a100-40g-4g.20gb a100-40g-7g.40gb a100-40g-mig-1g.5gb a100-40g-mig-2g.10gb a100-40g-mig-3g.20gb a100-40g-mig-4g.20gb a100-40g-mig-7g.40gb a100-40g-pcie a100-80g a100-80g-1g.10gb a100-80g-1g.20gb a100-80g-2g.20gb a100-80g-3g.40gb a100-80g-4g.40gb a100-80g-7g.80gb a100-80g-mig-1g.10gb a100-80g-mig-1g.20gb a100-80g-mig-2g.20gb a100-80g-mig-3g.40gb a100-80g-mig-4g.40gb a100-80g-mig-7g.80gb a100-80g-pcie a100-pcie-40g a100-pcie-80g a100-sxm-40g a100-sxm-80g a100-sxm4-40gb a100-sxm4-80gb a10g a40 a6000 a800 a800-80g a800-80g-pcie a800-pcie a800-sxm4-80gb aws-a10g b200 b300 blackwell-ultra dgx-b200 dgx-spark g5 gb10 gb200 gb200-nvl72 gb300 gb300-nvl72 geforce-rtx-3090 geforce-rtx-4090 geforce-rtx-5090 gh200-120gb gh200-144 gh200-144g gh200-480gb gh200-96g gh200-hbm3e h100 h100-1g.10gb h100-1g.20gb h100-2g.20gb h100-3g.40gb h100-4g.40gb h100-7g.80gb h100-80g h100-94g h100-mig-1g.10gb h100-mig-1g.20gb h100-mig-2g.20gb h100-mig-3g.40gb h100-mig-4g.40gb h100-mig-7g.80gb h100-nvl h100-pcie h100-pcie-80g h100-sxm h100-sxm5 h100nvl h20 h20-141g h20-3e h20-96g h200 h200-141g h200-nvl h200-sxm h200nvl h20e h800 h800-80g hgx-b200 hgx-b300 l4 l40 l40-workstation l40s mi300 mi300x mi325x mi350 mi355x rtx-3090 rtx-4090 rtx-5090 rtx-6000-ada rtx-a6000 rtx-pro-6000 rtx-pro-6000-blackwell rtx-pro-6000-maxq rtx-pro-6000-server rtx-pro-6000-ws rtx3090 rtx4090 rtx5090 rtx6000-ada t4 tesla-t4 v100-16g v100-32g v100-sxm2-16gb v100-sxm2-32gb'
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l request-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l format -x -a 'table log json tree'
complete -c vmemplan -n '__fish_seen_subcommand_from size' -s f -x -a 'table log json tree'
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l min-concurrency -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l min-kv-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l gate-on -x -a 'central low'
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l gpu-memory-utilization -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l util -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l max-model-len -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l max-num-seqs -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l max-num-batched-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l block-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l kv-cache-dtype -x -a 'auto bfloat16 float16 fp8 fp8_e4m3 fp8_e5m2 fp8_inc fp8_ds_mla fp8_per_token_head int8_per_token_head nvfp4'
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l dtype -x -a 'auto bfloat16 float16 half float32 float'
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l quantization -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -s q -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l tensor-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -o tp -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l pipeline-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -o pp -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l data-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -o dp -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l num-redundant-experts -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l decode-context-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -o dcp -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l kv-cache-memory -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l kv-cache-memory-bytes -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l speculative-config -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l limit-mm-per-prompt -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l mm-encoder-tp-mode -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l sampler -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l runner -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l assume-family -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l revision -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l config-format -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l vllm-version -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l gpu-total-memory -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l gpu-memory-in-use -x
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l quiet
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l no-color
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l enable-expert-parallel
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l no-enable-expert-parallel
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l enable-eplb
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l no-enable-eplb
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l enforce-eager
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l no-enforce-eager
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l disable-sliding-window
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l enable-prefix-caching
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l no-enable-prefix-caching
complete -c vmemplan -n '__fish_seen_subcommand_from size' -l skip-mm-profiling
complete -c vmemplan -n '__fish_seen_subcommand_from size' -F -a 'ai21labs/Jamba-v0.1 baidu/ERNIE-Image.text_encoder-Mistral3-3B deepseek-ai/DeepSeek-Coder-V2-Lite-Base deepseek-ai/DeepSeek-R1 deepseek-ai/DeepSeek-V3 deepseek-ai/DeepSeek-V3.2 deepseek-ai/DeepSeek-V4-Flash deepseek-ai/DeepSeek-V4-Pro deepseek-ai/DeepSeek-V4.1-Flash google/gemma-2-9b google/gemma-3-1b-it google/gemma-3-27b-it google/gemma-3-27b-pt google/gemma-4-26B-A4B LDCC/Qwen2.5-72B-Instruct-ko-AWQ meta-llama/Llama-3.1-405B meta-llama/Llama-3.1-405B-Instruct meta-llama/Llama-3.1-405B-Instruct-FP8 meta-llama/Llama-3.1-70B meta-llama/Llama-3.1-70B-Instruct meta-llama/Llama-3.1-8B meta-llama/Llama-3.1-8B-Instruct meta-llama/Llama-3.2-1B-Instruct meta-llama/Llama-3.2-3B-Instruct meta-llama/Llama-3.3-70B-Instruct meta-llama/Llama-4-Maverick-17B-128E-Instruct meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8 meta-llama/Llama-4-Scout-17B-16E-Instruct meta-llama/Meta-Llama-3.1-405B meta-llama/Meta-Llama-3.1-405B-Instruct meta-llama/Meta-Llama-3.1-405B-Instruct-FP8 meta-llama/Meta-Llama-3.1-70B meta-llama/Meta-Llama-3.1-70B-Instruct meta-llama/Meta-Llama-3.1-8B meta-llama/Meta-Llama-3.1-8B-Instruct microsoft/Phi-3-mini-128k-instruct microsoft/Phi-3.5-MoE-instruct microsoft/phi-4 MiniMaxAI/MiniMax-M1 MiniMaxAI/MiniMax-M2.5 mistralai/Mistral-7B-v0.1 mistralai/Mistral-Small-24B-Instruct-2501 mistralai/Mistral-Small-3.1-24B-Instruct-2503 mistralai/Mixtral-8x7B-v0.1 moonshotai/Kimi-K2-Instruct moonshotai/Kimi-Linear-48B-A3B-Instruct nvidia/Gemma-4-31B-IT-NVFP4 nvidia/Llama-3.1-70B-Instruct-FP8 nvidia/Nemotron-H-56B-Base-8K nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 openai/gpt-oss-120b openai/gpt-oss-20b PrimeIntellect/INTELLECT-3-Base Qwen/Qwen2.5-72B Qwen/Qwen2.5-7B Qwen/Qwen2.5-VL-7B-Instruct Qwen/Qwen3-235B-A22B Qwen/Qwen3-235B-A22B-FP8 Qwen/Qwen3-30B-A3B Qwen/Qwen3-30B-A3B-FP8 Qwen/Qwen3-32B Qwen/Qwen3-32B-FP8 Qwen/Qwen3-8B Qwen/Qwen3-8B-FP8 Qwen/Qwen3-Next-80B-A3B-Thinking Qwen/Qwen3.5-27B Qwen/Qwen3.5-35B-A3B TheBloke/Llama-2-7B-GPTQ tiiuae/Falcon-H1-0.5B zai-org/GLM-4.5-Air zai-org/GLM-4.7 zai-org/GLM-5'
complete -c vmemplan -n '__fish_seen_subcommand_from gpus' -l format -x -a 'table json'
complete -c vmemplan -n '__fish_seen_subcommand_from gpus' -s f -x -a 'table json'
complete -c vmemplan -n '__fish_seen_subcommand_from gpus' -l no-color
complete -c vmemplan -n '__fish_seen_subcommand_from models' -l format -x -a 'table json'
complete -c vmemplan -n '__fish_seen_subcommand_from models' -s f -x -a 'table json'
complete -c vmemplan -n '__fish_seen_subcommand_from models' -l all
complete -c vmemplan -n '__fish_seen_subcommand_from models' -l no-color
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l gpu -x -a '3090 4090 5090 a10 a100-40g a100-40g-1g.5gb a100-40g-2g.10gb a100-40g-3g.20gb a100-40g-4g.20gb a100-40g-7g.40gb a100-40g-mig-1g.5gb a100-40g-mig-2g.10gb a100-40g-mig-3g.20gb a100-40g-mig-4g.20gb a100-40g-mig-7g.40gb a100-40g-pcie a100-80g a100-80g-1g.10gb a100-80g-1g.20gb a100-80g-2g.20gb a100-80g-3g.40gb a100-80g-4g.40gb a100-80g-7g.80gb a100-80g-mig-1g.10gb a100-80g-mig-1g.20gb a100-80g-mig-2g.20gb a100-80g-mig-3g.40gb a100-80g-mig-4g.40gb a100-80g-mig-7g.80gb a100-80g-pcie a100-pcie-40g a100-pcie-80g a100-sxm-40g a100-sxm-80g a100-sxm4-40gb a100-sxm4-80gb a10g a40 a6000 a800 a800-80g a800-80g-pcie a800-pcie a800-sxm4-80gb aws-a10g b200 b300 blackwell-ultra dgx-b200 dgx-spark g5 gb10 gb200 gb200-nvl72 gb300 gb300-nvl72 geforce-rtx-3090 geforce-rtx-4090 geforce-rtx-5090 gh200-120gb gh200-144 gh200-144g gh200-480gb gh200-96g gh200-hbm3e h100 h100-1g.10gb h100-1g.20gb h100-2g.20gb h100-3g.40gb h100-4g.40gb h100-7g.80gb h100-80g h100-94g h100-mig-1g.10gb h100-mig-1g.20gb h100-mig-2g.20gb h100-mig-3g.40gb h100-mig-4g.40gb h100-mig-7g.80gb h100-nvl h100-pcie h100-pcie-80g h100-sxm h100-sxm5 h100nvl h20 h20-141g h20-3e h20-96g h200 h200-141g h200-nvl h200-sxm h200nvl h20e h800 h800-80g hgx-b200 hgx-b300 l4 l40 l40-workstation l40s mi300 mi300x mi325x mi350 mi355x rtx-3090 rtx-4090 rtx-5090 rtx-6000-ada rtx-a6000 rtx-pro-6000 rtx-pro-6000-blackwell rtx-pro-6000-maxq rtx-pro-6000-server rtx-pro-6000-ws rtx3090 rtx4090 rtx5090 rtx6000-ada t4 tesla-t4 v100-16g v100-32g v100-sxm2-16gb v100-sxm2-32gb'
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l lengths -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l prompt-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l output-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l images-per-request -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l image-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l videos-per-request -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l video-frames -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l video-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l request-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l requests -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l arrival-rate -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l seed -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l min-concurrency -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l min-kv-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l gate-on -x -a 'central low'
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l format -x -a 'table json'
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -s f -x -a 'table json'
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l gpu-memory-utilization -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l util -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l max-model-len -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l max-num-seqs -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l max-num-batched-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l block-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l kv-cache-dtype -x -a 'auto bfloat16 float16 fp8 fp8_e4m3 fp8_e5m2 fp8_inc fp8_ds_mla fp8_per_token_head int8_per_token_head nvfp4'
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l dtype -x -a 'auto bfloat16 float16 half float32 float'
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l quantization -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -s q -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l tensor-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -o tp -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l pipeline-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -o pp -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l data-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -o dp -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l num-redundant-experts -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l decode-context-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -o dcp -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l kv-cache-memory -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l kv-cache-memory-bytes -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l speculative-config -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l limit-mm-per-prompt -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l mm-encoder-tp-mode -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l sampler -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l runner -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l assume-family -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l revision -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l config-format -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l vllm-version -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l gpu-total-memory -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l gpu-memory-in-use -x
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l simulate
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l no-color
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l enable-expert-parallel
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l no-enable-expert-parallel
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l enable-eplb
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l no-enable-eplb
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l enforce-eager
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l no-enforce-eager
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l disable-sliding-window
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l enable-prefix-caching
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l no-enable-prefix-caching
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -l skip-mm-profiling
complete -c vmemplan -n '__fish_seen_subcommand_from concurrency' -F -a 'ai21labs/Jamba-v0.1 baidu/ERNIE-Image.text_encoder-Mistral3-3B deepseek-ai/DeepSeek-Coder-V2-Lite-Base deepseek-ai/DeepSeek-R1 deepseek-ai/DeepSeek-V3 deepseek-ai/DeepSeek-V3.2 deepseek-ai/DeepSeek-V4-Flash deepseek-ai/DeepSeek-V4-Pro deepseek-ai/DeepSeek-V4.1-Flash google/gemma-2-9b google/gemma-3-1b-it google/gemma-3-27b-it google/gemma-3-27b-pt google/gemma-4-26B-A4B LDCC/Qwen2.5-72B-Instruct-ko-AWQ meta-llama/Llama-3.1-405B meta-llama/Llama-3.1-405B-Instruct meta-llama/Llama-3.1-405B-Instruct-FP8 meta-llama/Llama-3.1-70B meta-llama/Llama-3.1-70B-Instruct meta-llama/Llama-3.1-8B meta-llama/Llama-3.1-8B-Instruct meta-llama/Llama-3.2-1B-Instruct meta-llama/Llama-3.2-3B-Instruct meta-llama/Llama-3.3-70B-Instruct meta-llama/Llama-4-Maverick-17B-128E-Instruct meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8 meta-llama/Llama-4-Scout-17B-16E-Instruct meta-llama/Meta-Llama-3.1-405B meta-llama/Meta-Llama-3.1-405B-Instruct meta-llama/Meta-Llama-3.1-405B-Instruct-FP8 meta-llama/Meta-Llama-3.1-70B meta-llama/Meta-Llama-3.1-70B-Instruct meta-llama/Meta-Llama-3.1-8B meta-llama/Meta-Llama-3.1-8B-Instruct microsoft/Phi-3-mini-128k-instruct microsoft/Phi-3.5-MoE-instruct microsoft/phi-4 MiniMaxAI/MiniMax-M1 MiniMaxAI/MiniMax-M2.5 mistralai/Mistral-7B-v0.1 mistralai/Mistral-Small-24B-Instruct-2501 mistralai/Mistral-Small-3.1-24B-Instruct-2503 mistralai/Mixtral-8x7B-v0.1 moonshotai/Kimi-K2-Instruct moonshotai/Kimi-Linear-48B-A3B-Instruct nvidia/Gemma-4-31B-IT-NVFP4 nvidia/Llama-3.1-70B-Instruct-FP8 nvidia/Nemotron-H-56B-Base-8K nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 openai/gpt-oss-120b openai/gpt-oss-20b PrimeIntellect/INTELLECT-3-Base Qwen/Qwen2.5-72B Qwen/Qwen2.5-7B Qwen/Qwen2.5-VL-7B-Instruct Qwen/Qwen3-235B-A22B Qwen/Qwen3-235B-A22B-FP8 Qwen/Qwen3-30B-A3B Qwen/Qwen3-30B-A3B-FP8 Qwen/Qwen3-32B Qwen/Qwen3-32B-FP8 Qwen/Qwen3-8B Qwen/Qwen3-8B-FP8 Qwen/Qwen3-Next-80B-A3B-Thinking Qwen/Qwen3.5-27B Qwen/Qwen3.5-35B-A3B TheBloke/Llama-2-7B-GPTQ tiiuae/Falcon-H1-0.5B zai-org/GLM-4.5-Air zai-org/GLM-4.7 zai-org/GLM-5'
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l vary -x -a 'gpu= tensor-parallel-size= pipeline-parallel-size= gpu-memory-utilization= max-model-len= max-num-seqs= max-num-batched-tokens= block-size= kv-cache-dtype= dtype= enforce-eager= enable-prefix-caching= kv-cache-memory= vllm-version= quantization= data-parallel-size= enable-expert-parallel= decode-context-parallel-size= num-redundant-experts= sampler= speculative-config= limit-mm-per-prompt='
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l gpu -x -a '3090 4090 5090 a10 a100-40g a100-40g-1g.5gb a100-40g-2g.10gb a100-40g-3g.20gb a100-40g-4g.20gb a100-40g-7g.40gb a100-40g-mig-1g.5gb a100-40g-mig-2g.10gb a100-40g-mig-3g.20gb a100-40g-mig-4g.20gb a100-40g-mig-7g.40gb a100-40g-pcie a100-80g a100-80g-1g.10gb a100-80g-1g.20gb a100-80g-2g.20gb a100-80g-3g.40gb a100-80g-4g.40gb a100-80g-7g.80gb a100-80g-mig-1g.10gb a100-80g-mig-1g.20gb a100-80g-mig-2g.20gb a100-80g-mig-3g.40gb a100-80g-mig-4g.40gb a100-80g-mig-7g.80gb a100-80g-pcie a100-pcie-40g a100-pcie-80g a100-sxm-40g a100-sxm-80g a100-sxm4-40gb a100-sxm4-80gb a10g a40 a6000 a800 a800-80g a800-80g-pcie a800-pcie a800-sxm4-80gb aws-a10g b200 b300 blackwell-ultra dgx-b200 dgx-spark g5 gb10 gb200 gb200-nvl72 gb300 gb300-nvl72 geforce-rtx-3090 geforce-rtx-4090 geforce-rtx-5090 gh200-120gb gh200-144 gh200-144g gh200-480gb gh200-96g gh200-hbm3e h100 h100-1g.10gb h100-1g.20gb h100-2g.20gb h100-3g.40gb h100-4g.40gb h100-7g.80gb h100-80g h100-94g h100-mig-1g.10gb h100-mig-1g.20gb h100-mig-2g.20gb h100-mig-3g.40gb h100-mig-4g.40gb h100-mig-7g.80gb h100-nvl h100-pcie h100-pcie-80g h100-sxm h100-sxm5 h100nvl h20 h20-141g h20-3e h20-96g h200 h200-141g h200-nvl h200-sxm h200nvl h20e h800 h800-80g hgx-b200 hgx-b300 l4 l40 l40-workstation l40s mi300 mi300x mi325x mi350 mi355x rtx-3090 rtx-4090 rtx-5090 rtx-6000-ada rtx-a6000 rtx-pro-6000 rtx-pro-6000-blackwell rtx-pro-6000-maxq rtx-pro-6000-server rtx-pro-6000-ws rtx3090 rtx4090 rtx5090 rtx6000-ada t4 tesla-t4 v100-16g v100-32g v100-sxm2-16gb v100-sxm2-32gb'
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l request-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l min-concurrency -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l min-kv-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l gate-on -x -a 'central low'
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l chart -x -a 'weights_bytes available_kv_cache_bytes kv_cache_tokens max_concurrency num_blocks concurrency_at_request_tokens'
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l chart-x -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l format -x -a 'table csv json'
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -s f -x -a 'table csv json'
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l max-points -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l gpu-memory-utilization -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l util -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l max-model-len -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l max-num-seqs -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l max-num-batched-tokens -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l block-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l kv-cache-dtype -x -a 'auto bfloat16 float16 fp8 fp8_e4m3 fp8_e5m2 fp8_inc fp8_ds_mla fp8_per_token_head int8_per_token_head nvfp4'
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l dtype -x -a 'auto bfloat16 float16 half float32 float'
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l quantization -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -s q -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l tensor-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -o tp -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l pipeline-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -o pp -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l data-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -o dp -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l num-redundant-experts -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l decode-context-parallel-size -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -o dcp -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l kv-cache-memory -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l kv-cache-memory-bytes -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l speculative-config -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l limit-mm-per-prompt -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l mm-encoder-tp-mode -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l sampler -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l runner -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l assume-family -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l revision -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l config-format -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l vllm-version -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l gpu-total-memory -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l gpu-memory-in-use -x
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l solve
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l no-color
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l enable-expert-parallel
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l no-enable-expert-parallel
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l enable-eplb
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l no-enable-eplb
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l enforce-eager
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l no-enforce-eager
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l disable-sliding-window
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l enable-prefix-caching
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l no-enable-prefix-caching
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -l skip-mm-profiling
complete -c vmemplan -n '__fish_seen_subcommand_from sweep' -F -a 'ai21labs/Jamba-v0.1 baidu/ERNIE-Image.text_encoder-Mistral3-3B deepseek-ai/DeepSeek-Coder-V2-Lite-Base deepseek-ai/DeepSeek-R1 deepseek-ai/DeepSeek-V3 deepseek-ai/DeepSeek-V3.2 deepseek-ai/DeepSeek-V4-Flash deepseek-ai/DeepSeek-V4-Pro deepseek-ai/DeepSeek-V4.1-Flash google/gemma-2-9b google/gemma-3-1b-it google/gemma-3-27b-it google/gemma-3-27b-pt google/gemma-4-26B-A4B LDCC/Qwen2.5-72B-Instruct-ko-AWQ meta-llama/Llama-3.1-405B meta-llama/Llama-3.1-405B-Instruct meta-llama/Llama-3.1-405B-Instruct-FP8 meta-llama/Llama-3.1-70B meta-llama/Llama-3.1-70B-Instruct meta-llama/Llama-3.1-8B meta-llama/Llama-3.1-8B-Instruct meta-llama/Llama-3.2-1B-Instruct meta-llama/Llama-3.2-3B-Instruct meta-llama/Llama-3.3-70B-Instruct meta-llama/Llama-4-Maverick-17B-128E-Instruct meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8 meta-llama/Llama-4-Scout-17B-16E-Instruct meta-llama/Meta-Llama-3.1-405B meta-llama/Meta-Llama-3.1-405B-Instruct meta-llama/Meta-Llama-3.1-405B-Instruct-FP8 meta-llama/Meta-Llama-3.1-70B meta-llama/Meta-Llama-3.1-70B-Instruct meta-llama/Meta-Llama-3.1-8B meta-llama/Meta-Llama-3.1-8B-Instruct microsoft/Phi-3-mini-128k-instruct microsoft/Phi-3.5-MoE-instruct microsoft/phi-4 MiniMaxAI/MiniMax-M1 MiniMaxAI/MiniMax-M2.5 mistralai/Mistral-7B-v0.1 mistralai/Mistral-Small-24B-Instruct-2501 mistralai/Mistral-Small-3.1-24B-Instruct-2503 mistralai/Mixtral-8x7B-v0.1 moonshotai/Kimi-K2-Instruct moonshotai/Kimi-Linear-48B-A3B-Instruct nvidia/Gemma-4-31B-IT-NVFP4 nvidia/Llama-3.1-70B-Instruct-FP8 nvidia/Nemotron-H-56B-Base-8K nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 openai/gpt-oss-120b openai/gpt-oss-20b PrimeIntellect/INTELLECT-3-Base Qwen/Qwen2.5-72B Qwen/Qwen2.5-7B Qwen/Qwen2.5-VL-7B-Instruct Qwen/Qwen3-235B-A22B Qwen/Qwen3-235B-A22B-FP8 Qwen/Qwen3-30B-A3B Qwen/Qwen3-30B-A3B-FP8 Qwen/Qwen3-32B Qwen/Qwen3-32B-FP8 Qwen/Qwen3-8B Qwen/Qwen3-8B-FP8 Qwen/Qwen3-Next-80B-A3B-Thinking Qwen/Qwen3.5-27B Qwen/Qwen3.5-35B-A3B TheBloke/Llama-2-7B-GPTQ tiiuae/Falcon-H1-0.5B zai-org/GLM-4.5-Air zai-org/GLM-4.7 zai-org/GLM-5'
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -l model -x
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -l what-if -x
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -l gpu -x -a '3090 4090 5090 a10 a100-40g a100-40g-1g.5gb a100-40g-2g.10gb a100-40g-3g.20gb a100-40g-4g.20gb a100-40g-7g.40gb a100-40g-mig-1g.5gb a100-40g-mig-2g.10gb a100-40g-mig-3g.20gb a100-40g-mig-4g.20gb a100-40g-mig-7g.40gb a100-40g-pcie a100-80g a100-80g-1g.10gb a100-80g-1g.20gb a100-80g-2g.20gb a100-80g-3g.40gb a100-80g-4g.40gb a100-80g-7g.80gb a100-80g-mig-1g.10gb a100-80g-mig-1g.20gb a100-80g-mig-2g.20gb a100-80g-mig-3g.40gb a100-80g-mig-4g.40gb a100-80g-mig-7g.80gb a100-80g-pcie a100-pcie-40g a100-pcie-80g a100-sxm-40g a100-sxm-80g a100-sxm4-40gb a100-sxm4-80gb a10g a40 a6000 a800 a800-80g a800-80g-pcie a800-pcie a800-sxm4-80gb aws-a10g b200 b300 blackwell-ultra dgx-b200 dgx-spark g5 gb10 gb200 gb200-nvl72 gb300 gb300-nvl72 geforce-rtx-3090 geforce-rtx-4090 geforce-rtx-5090 gh200-120gb gh200-144 gh200-144g gh200-480gb gh200-96g gh200-hbm3e h100 h100-1g.10gb h100-1g.20gb h100-2g.20gb h100-3g.40gb h100-4g.40gb h100-7g.80gb h100-80g h100-94g h100-mig-1g.10gb h100-mig-1g.20gb h100-mig-2g.20gb h100-mig-3g.40gb h100-mig-4g.40gb h100-mig-7g.80gb h100-nvl h100-pcie h100-pcie-80g h100-sxm h100-sxm5 h100nvl h20 h20-141g h20-3e h20-96g h200 h200-141g h200-nvl h200-sxm h200nvl h20e h800 h800-80g hgx-b200 hgx-b300 l4 l40 l40-workstation l40s mi300 mi300x mi325x mi350 mi355x rtx-3090 rtx-4090 rtx-5090 rtx-6000-ada rtx-a6000 rtx-pro-6000 rtx-pro-6000-blackwell rtx-pro-6000-maxq rtx-pro-6000-server rtx-pro-6000-ws rtx3090 rtx4090 rtx5090 rtx6000-ada t4 tesla-t4 v100-16g v100-32g v100-sxm2-16gb v100-sxm2-32gb'
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -l vllm-version -x
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -l format -x -a 'table json'
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -s f -x -a 'table json'
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -l online
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -l check
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -l no-color
complete -c vmemplan -n '__fish_seen_subcommand_from explain-log' -F
