#!/usr/bin/env python3
"""An OpenAI-compatible embeddings endpoint that takes a fixed time per request and returns
deterministic unit vectors drawn from each text's hash: a stand-in for a GPU server, to measure
what request concurrency buys (scripts/bench-http-concurrency.sh).

    models/.venv/bin/python scripts/mock_embeddings.py --port 8091 --latency-ms 50 --dim 384

Requests are served on their own threads, so N in flight take one latency, not N. Loopback only.
"""
import argparse
import hashlib
import json
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def vector(text, dim):
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    v = np.random.default_rng(seed).standard_normal(dim)
    return (v / np.linalg.norm(v)).tolist()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            time.sleep(args.latency_ms / 1000)
            tokens = sum(len(t.split()) for t in texts)
            answer = json.dumps({
                "object": "list",
                "model": body.get("model", "mock"),
                "data": [{"object": "embedding", "index": i, "embedding": vector(t, args.dim)} for i, t in enumerate(texts)],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_):
            pass

    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 128
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
