"""A small Search-R1 retrieval server over a tiny corpus: what verl's search tool config points at.

verl's search example asks its user to start a dense retriever
(``examples/sglang_multiturn/search_r1_like/local_dense_retriever/retrieval_server.py``)
answering ``POST /retrieve`` with ``{"queries", "topk", "return_scores"}``;
this one speaks the same protocol over :data:`CORPUS`, ranking documents by
the words they share with the query. The tool tests and the verl corpus
runner (benchmarks/verl_corpus.py) serve it on loopback.

Usage: ``python benchmarks/retrieval_server.py [--port 8000]``.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

# Each document: its title, a newline, its text (Search-R1's "contents").
CORPUS = [
    "Paris\nParis is the capital of France.",
    "Berlin\nBerlin is the capital of Germany.",
    "Photosynthesis\nPlants turn light into chemical energy.",
    "Pens\nPens are counted one by one: 1 pen and 17 pens are 18 pens.",
]


def _words(text: str) -> set[str]:
    return set(text.lower().replace(".", "").replace("?", "").split())


class RetrievalHandler(BaseHTTPRequestHandler):
    """Search-R1's retrieval server protocol over :data:`CORPUS`, ranked by shared words."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/retrieve" or body.get("return_scores") is not True:
            self.send_error(404 if self.path != "/retrieve" else 400)
            return
        result = []
        for query in body["queries"]:
            words = _words(query)
            ranked = sorted(CORPUS, key=lambda doc: -len(words & _words(doc)))
            result.append([{"document": {"id": str(CORPUS.index(d)), "contents": d}, "score": 1.0}
                           for d in ranked[: body["topk"]]])
        data = json.dumps({"result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:  # quiet: one line per request would drown a training log
        pass


@contextlib.contextmanager
def serving(port: int = 0) -> Iterator[str]:
    """The server on 127.0.0.1:``port`` (0: a free one) in a thread until the block ends; yields its /retrieve URL."""
    server = ThreadingHTTPServer(("127.0.0.1", port), RetrievalHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/retrieve"
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    port = parser.parse_args().port
    ThreadingHTTPServer(("127.0.0.1", port), RetrievalHandler).serve_forever()
