"""The floor: small helpers every package of the project imports, and which import none of it.

Each module is one concept: ``errors`` (the exception family and exit codes), ``files`` (atomic,
owner-only writes), ``flags`` (reading and setting vLLM argv flags), ``parallelism`` (the devices a
serve argv uses on its node), ``yamlio`` (YAML with file:line errors), ``suggest`` (did-you-mean and
case-insensitive id matching), ``versions`` (vLLM version parsing), ``appdirs`` (XDG config/state/
cache folders), ``placeholders`` (the ``$NAME`` grammar of plans), ``nvml`` (NVML access shared by
detect and the launcher) and ``tables`` (plain-text tables for the CLI). The import contracts
(``.importlinter``) keep them leaves.
"""
