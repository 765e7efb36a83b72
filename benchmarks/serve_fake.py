"""Serve the tests' fake OpenAI-compatible endpoint in its own process: `python serve_fake.py LATENCY`.

Prints the base URL on the first line, then serves until killed.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import FakeOpenAI

if __name__ == "__main__":
    with FakeOpenAI(latency=float(sys.argv[1])) as server:
        print(server.base_url, flush=True)
        while True:
            time.sleep(3600)
