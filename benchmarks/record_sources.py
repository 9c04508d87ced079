"""A pytest plugin that records every tensorlang source the tests parse, for
benchmarks/cost_warnings.py --sources:

    python -m pytest -p benchmarks.record_sources tests/ ...   # writes cost_sources.jsonl
    python -m benchmarks.cost_warnings --sources cost_sources.jsonl

One JSON object per line, {"src": text, "file": name}, each text once; the file is
TL_RECORD_SOURCES if set, else cost_sources.jsonl in the working directory.  Only
sources that parse are recorded (tl.parse and tl.load both go through tl.parse)."""
from __future__ import annotations

import json
import os

import tensorlang
import tensorlang.api as api

_OUT = os.environ.get("TL_RECORD_SOURCES", "cost_sources.jsonl")
_SEEN: set[str] = set()
_PARSE = api.parse


def _recording_parse(source: str, filename: str = "<string>"):
    module = _PARSE(source, filename)
    if source not in _SEEN:
        _SEEN.add(source)
        with open(_OUT, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"src": source, "file": filename}) + "\n")
    return module


api.parse = _recording_parse
tensorlang.parse = _recording_parse
