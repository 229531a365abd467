"""vllm_wizard.launcher"""
