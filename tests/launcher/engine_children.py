"""A fake vLLM API server for the readiness/liveness/cleanup tests (run with ``sys.executable -c``).

``ENGINE_SERVER PORT MODE [MODELS_AFTER_S] [SHM_NAME]`` serves on 127.0.0.1:PORT (threaded):

* ``/health`` 200 at once; ``/v1/models`` lists ``tiny`` only after MODELS_AFTER_S seconds;
* ``/v1/completions`` (POST) answers one token, or never answers when MODE contains ``hang``
  (an API server whose engine core hangs: ``/health`` and ``/v1/models`` keep answering);
* ``/metrics`` shows 2 waiting requests, with frozen token counters when MODE contains ``hang``;
* ``--api-key KEY`` anywhere after: ``/v1`` paths answer 401 without ``Authorization: Bearer KEY``
  (as vLLM's ``AuthenticationMiddleware``);
* MODE ``ignore-term``: ignores SIGTERM and starts a grandchild that ignores it too;
* with SHM_NAME: creates ``/dev/shm/SHM_NAME`` ``O_EXCL`` (like vLLM's offload region; exit 3 when it
  exists), maps it, and with MODE ``crash`` exits 1 after 1.5 s without removing it.
"""

ENGINE_SERVER = r"""
import http.server, json, mmap, os, signal, socketserver, subprocess, sys, threading, time
port, mode = int(sys.argv[1]), sys.argv[2]
models_after = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
shm = sys.argv[4] if len(sys.argv) > 4 else ""
key = sys.argv[sys.argv.index("--api-key") + 1] if "--api-key" in sys.argv else None
t0 = time.monotonic()
if "ignore-term" in mode:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    g = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    print("GRANDCHILD", g.pid, flush=True)
if shm:
    try:
        fd = os.open("/dev/shm/" + shm, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    except FileExistsError:
        print("FileExistsError: /dev/shm/" + shm, flush=True)
        sys.exit(3)
    os.ftruncate(fd, 4096)
    region = mmap.mmap(fd, 4096)
    print("created /dev/shm/" + shm, flush=True)
    if "crash" in mode:
        threading.Timer(1.5, lambda: os._exit(1)).start()
class H(http.server.BaseHTTPRequestHandler):
    def _send(self, code, body, ctype="application/json"):
        self.send_response(code); self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def _denied(self):
        if key and self.path.startswith("/v1") and self.headers.get("Authorization") != "Bearer " + key:
            self._send(401, b'{"error": "Unauthorized"}')
            return True
        return False
    def do_GET(self):
        if self._denied():
            return
        if self.path == "/health":
            self._send(200, b"")
        elif self.path == "/v1/models":
            data = [{"id": "tiny", "object": "model"}] if time.monotonic() - t0 >= models_after else []
            self._send(200, json.dumps({"object": "list", "data": data}).encode())
        elif self.path == "/metrics":
            tokens = 7.0 if "hang" in mode else 7.0 + (time.monotonic() - t0) * 10
            text = ("vllm:num_requests_running 0.0\nvllm:num_requests_waiting 2.0\n"
                    f"vllm:prompt_tokens_total {tokens}\nvllm:generation_tokens_total {tokens}\n")
            self._send(200, text.encode(), "text/plain")
        else:
            self._send(404, b"{}")
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self._denied():
            return
        if self.path == "/v1/completions":
            print("completion", flush=True)
            if "hang" in mode:
                time.sleep(3600)
            self._send(200, json.dumps({"choices": [{"text": "x"}]}).encode())
        else:
            self._send(404, b"{}")
    def log_message(self, *a):
        pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
S(("127.0.0.1", port), H).serve_forever()
"""
