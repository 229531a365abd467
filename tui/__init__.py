"""vllm_wizard.tui"""
