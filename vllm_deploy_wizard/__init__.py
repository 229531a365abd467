"""vllm-wizard: detect the node, plan the vLLM recipe commands, launch and supervise them."""

__version__ = "0.1.0"
