"""vllm_deploy_wizard.tui"""
