"""vllm_wizard.catalog"""
