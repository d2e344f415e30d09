#!/usr/bin/env python3
"""A pwab-agent/1 server for the Slurm tests: searches with the first observation's words after a fixed delay, so
that a shard takes long enough to be requeued in the middle. Prints its URL on the first line of stdout."""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY_S = float(sys.argv[1]) if len(sys.argv) > 1 else 0.2


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(DELAY_S)
        words = request["first_observation"].split(":", 1)[-1].split()[:12]
        reply = {"name": "search_product_by_query", "arguments": {"query": " ".join(words)}}
        if request.get("conversation"):
            reply = {"name": "stop", "arguments": {}}
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
