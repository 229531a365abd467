"""Constants the plan file and vLLM fix, owned once for the writer (catalog) and the readers.

The catalog writes plan files and the launcher reads them without importing the catalog
(docs/architecture.md §2), so the numbers both sides must agree on live here.
"""

#: The plan-file format version the catalog writes and the launcher accepts (docs/contracts.md §2).
PLAN_VERSION = 1

#: The most nodes a selection may ask for: the selection model's field limit (the recipes builder's
#: node picker), and the bound every node-count check and flag uses.
MAX_NODES = 16

#: The port ``vllm serve`` binds when the argv has no ``--port`` (vLLM's ``--port`` default,
#: vllm/entrypoints/openai/cli_args.py, every release the catalog targets).
VLLM_DEFAULT_PORT = 8000

#: Rough seconds reading an uncached vLLM install's version and ``vllm serve`` flag list takes
#: (``vllm --version`` then ``vllm serve --help=all``, ~12 s each on the vLLM 0.32.0 CPU build,
#: launcher/preflight.py); read once per install and cached. The one figure ``plan --help``,
#: ``launch --help`` and their progress notices quote.
VLLM_FLAG_PROBE_S = 30

#: The plan's ``deploy_type`` values (docs/plan-file.md §3.1): the catalog writes one, the launcher
#: refuses a plan file with another.
DEPLOY_TYPES = ("single_node", "multi_node", "pd_cluster", "kv_store_lb", "omni")

#: A plan process's ``role`` values (docs/plan-file.md §3.2, plus ``infra``: a service such as
#: Dynamo's etcd); the launcher refuses a plan file with another.
PROCESS_ROLES = ("serve", "head", "worker", "prefill", "decode", "router", "companion",
                 "mooncake_master", "mooncake_store", "infra")

#: Every key a plan-file process may have (docs/contracts.md §2, docs/plan-file.md §3.2 and §6);
#: the launcher refuses any other, with a did-you-mean.
PROCESS_KEYS = ("name", "role", "node_rank", "instance", "node", "argv", "env", "phase", "depends_on", "ports",
                "health", "setup", "group", "restart", "stop", "ready_timeout_s", "cwd", "wait_for")
