"""A stand-in for one vLLM engine of a prefill/decode pair, for the end-to-end tests (no GPU here).

``python3 pd_standin_engine.py --role prefill|decode --port P [ignored vLLM arguments…]``: an
OpenAI-compatible HTTP server on every address (``/health``, ``/v1/models``, ``/v1/completions``,
``/v1/chat/completions``, ``/stats``) that speaks the part of the NIXL handshake the vLLM Router
relays (vLLM 0.32.0 ``vllm/distributed/kv_transfer/kv_connector/v1/nixl``):

* prefill listens on its side channel (``VLLM_NIXL_SIDE_CHANNEL_HOST``:``VLLM_NIXL_SIDE_CHANNEL_PORT``,
  as vLLM binds it) and answers a request carrying ``kv_transfer_params.do_remote_decode`` with
  ``kv_transfer_params`` naming that host and port (``remote_host``/``remote_port``);
* decode, given those ``kv_transfer_params``, connects to the prefill's side channel and reads its
  greeting — a side channel bound to an address the decode node cannot reach fails the request
  (HTTP 502), as the real KV transfer would.

``/stats`` counts the requests each path served (``{"completions": n, "chat": n, "kv_pulls": n}``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "standin-model"
STATS = {"completions": 0, "chat": 0, "kv_pulls": 0}
GREETING = b"nixl-standin\n"


def side_channel(host: str, port: int) -> None:
    """Accept connections on the side channel and greet each (vLLM's handshake listener stand-in)."""
    srv = socket.create_server((host, port), reuse_port=False)
    while True:
        conn, _ = srv.accept()
        with conn:
            conn.sendall(GREETING)


def pull(params: dict) -> str | None:
    """Read the prefill side channel named by ``params``; None when it answers, else the error."""
    try:
        with socket.create_connection((params["remote_host"], int(params["remote_port"])), timeout=5) as s:
            return None if s.recv(64) == GREETING else "unexpected greeting"
    except (OSError, KeyError, ValueError) as exc:
        return f"side channel {params.get('remote_host')}:{params.get('remote_port')}: {exc}"


class Handler(BaseHTTPRequestHandler):
    role = "prefill"

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, fmt: str, *args) -> None:  # one line per request on stdout (the run's log)
        print(f"{self.role} {self.address_string()} {fmt % args}", flush=True)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/health":
            self._send(200, {})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "standin",
                                                         "max_model_len": 256}]})
        elif self.path == "/stats":
            self._send(200, STATS)
        else:
            self._send(404, {"error": f"no {self.path}"})

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        try:
            req = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self._send(400, {"error": "not JSON"})
        chat = self.path == "/v1/chat/completions"
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            return self._send(404, {"error": f"no {self.path}"})
        params = req.get("kv_transfer_params") or {}
        out_params = None
        if self.role == "prefill":
            out_params = {"do_remote_prefill": True, "do_remote_decode": False, "remote_engine_id": "standin-prefill",
                          "remote_block_ids": [0], "remote_request_id": str(uuid.uuid4()),
                          "remote_host": os.environ.get("VLLM_NIXL_SIDE_CHANNEL_HOST", "localhost"),
                          "remote_port": int(os.environ.get("VLLM_NIXL_SIDE_CHANNEL_PORT", "5600")), "tp_size": 1}
            text = ""
        else:
            if params.get("remote_host"):
                err = pull(params)
                if err:
                    return self._send(502, {"error": err})
                STATS["kv_pulls"] += 1
            text = f" decoded by {socket.gethostname()}"
        STATS["chat" if chat else "completions"] += 1
        now = int(time.time())
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        if chat:
            body = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": now, "model": MODEL,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}], "usage": usage}
        else:
            body = {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": now, "model": MODEL,
                    "choices": [{"index": 0, "text": text, "finish_reason": "stop", "logprobs": None}],
                    "usage": usage}
        if out_params is not None:
            body["kv_transfer_params"] = out_params
        self._send(200, body)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--role", choices=("prefill", "decode"), required=True)
    p.add_argument("--port", type=int, required=True)
    args, _ = p.parse_known_args(argv)
    Handler.role = args.role
    if args.role == "prefill":
        host = os.environ.get("VLLM_NIXL_SIDE_CHANNEL_HOST", "localhost")
        port = int(os.environ.get("VLLM_NIXL_SIDE_CHANNEL_PORT", "5600"))
        threading.Thread(target=side_channel, args=(host, port), daemon=True).start()
    ThreadingHTTPServer(("0.0.0.0", args.port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
