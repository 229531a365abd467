"""``python -m vllm_deploy_wizard`` == ``vllm-wizard``."""

from vllm_deploy_wizard.cli import main

raise SystemExit(main())
