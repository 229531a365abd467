"""Running a plan file on engines other than this machine's supervisor (docs/multi-node.md §3–§5).

* :mod:`.kubernetes` — manifests for ``kubectl apply`` (LeaderWorkerSet per multi-node group);
* :mod:`.slurm` — an sbatch script, one task per node;
* :mod:`.ssh` — one head starting and controlling every node's supervisor over OpenSSH.

They read the plan-file data of docs/contracts.md §2 only (never the catalog).
"""
