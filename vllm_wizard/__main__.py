"""``python -m vllm_wizard`` == ``vllm-wizard``."""

from vllm_wizard.cli import main

raise SystemExit(main())
