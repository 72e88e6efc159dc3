"""A small OpenAI-compatible embeddings server over an installed ragsweep model folder
(model.onnx, tokenizer.json, model.toml), run by Python ONNX Runtime: what a team's own
embedding server looks like to ragsweep, for measuring an http model against the local one.

    models/.venv/bin/python scripts/serve_embeddings.py models/minilm-l6 --port 8089
    ragsweep models add --name minilm-http --url http://127.0.0.1:8089/v1 --model minilm-l6

POST /v1/embeddings {"model": ..., "input": [...]} answers {"data": [{"index", "embedding"}],
"usage": {"prompt_tokens", "total_tokens"}}. Pooling (mean or cls) and max_length come from the
folder's model.toml; vectors are L2-normalised. Listens on loopback only.
"""
import argparse
import json
import sys
import threading
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def load(folder: Path):
    settings = tomllib.loads((folder / "model.toml").read_text())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=int(settings["max_length"]))
    tokenizer.enable_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(folder / settings.get("onnx", "model.onnx")), options)
    return settings, tokenizer, session


def embed(settings, tokenizer, session, texts):
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": mask}
    names = {i.name for i in session.get_inputs()}
    if "token_type_ids" in names:
        feeds["token_type_ids"] = np.zeros_like(ids)
    out = session.run(None, feeds)[0].astype(np.float32)
    if out.ndim == 3:
        if settings["pooling"] == "cls":
            out = out[:, 0, :]
        else:
            weights = mask[:, :, None].astype(np.float32)
            out = (out * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
    out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    tokens = int(mask.sum())
    return out, tokens


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="an installed model folder")
    parser.add_argument("--port", type=int, default=8089)
    args = parser.parse_args()
    settings, tokenizer, session = load(args.model)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length))
            texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
            with lock:
                vectors, tokens = embed(settings, tokenizer, session, texts)
            data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
            body = json.dumps({"object": "list", "model": request.get("model"), "data": data,
                               "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"serving {args.model} on http://127.0.0.1:{args.port}/v1/embeddings", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
