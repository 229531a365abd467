"""vllm_wizard.detect"""
