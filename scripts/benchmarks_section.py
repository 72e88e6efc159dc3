"""Replaces one script's section of BENCHMARKS.md (read from stdin), keeping the others.

usage: python3 benchmarks_section.py NAME FILE < section.md
A section lives between `<!-- begin NAME -->` and `<!-- end NAME -->`; a new one is appended.
"""
import os
import re
import sys

name, path = sys.argv[1], sys.argv[2]
body = sys.stdin.read().rstrip("\n")
begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
block = f"{begin}\n{body}\n{end}"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
if pattern.search(text):
    text = pattern.sub(lambda _: block, text)
else:
    text = text.rstrip("\n") + "\n\n" + block
tmp = path + ".section-tmp"
with open(tmp, "w") as f:
    f.write(text.rstrip("\n") + "\n")
os.replace(tmp, path)
