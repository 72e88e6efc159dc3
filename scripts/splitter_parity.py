"""Chunk boundaries of ragsweep's library splitters against the libraries themselves.

    python scripts/splitter_parity.py DOCUMENTS.jsonl CHUNKS.jsonl [--chunking-evaluation REPO]

DOCUMENTS.jsonl is `ragsweep chunks EXP --documents` (the texts as the chunkers read them),
CHUNKS.jsonl is `ragsweep chunks EXP`. Each chunker's chunks are made again in Python, per
document, with the library it names and its settings (`spec`):

- `langchain_recursive`: langchain_text_splitters.RecursiveCharacterTextSplitter (with
  `from_tiktoken_encoder` when it counts tokens);
- `chroma_fixed_token`: Chroma's FixedTokenChunker from a checkout of chunking_evaluation
  (--chunking-evaluation; not on PyPI), else langchain_text_splitters.TokenTextSplitter, whose
  `split_text_on_tokens` Chroma's copies;
- `llamaindex_sentence`: llama_index.core.node_parser.SentenceSplitter, with the encoding's
  `encode(allowed_special="all")` as its tokenizer (cl100k_base is its default's).

tiktoken's BPE files are read from the tiktoken-rs crate that ragsweep builds with (its sha256
is checked by tiktoken), never downloaded. Prints one JSON line per chunker (documents, chunks,
equal documents, documents that differ with the first difference, windows cut inside a
character, documents where the library sends a chunk again right after itself) and exits 1
when any document differs.
"""

import argparse
import glob
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import types

BLOBS = {
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}


def offline_tiktoken():
    """Points tiktoken's cache at the BPE files shipped inside the tiktoken-rs crate."""
    cache = tempfile.mkdtemp(prefix="tiktoken-")
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    for name, sha1 in BLOBS.items():
        found = sorted(glob.glob(f"{home}/registry/src/*/tiktoken-rs-*/assets/{name}.tiktoken"))
        if not found:
            sys.exit(f"no {name}.tiktoken in the tiktoken-rs crate under {home}/registry (build ragsweep first)")
        shutil.copy(found[-1], os.path.join(cache, sha1))
    os.environ["TIKTOKEN_CACHE_DIR"] = cache


def chroma_fixed_token_class(repo):
    """FixedTokenChunker from a chunking_evaluation checkout, without its package's imports
    (chromadb, OpenAI): its base class is an abstract `split_text`."""
    chunking = os.path.join(repo, "chunking_evaluation", "chunking")
    package = types.ModuleType("chunking_evaluation.chunking")
    package.__path__ = [chunking]
    sys.modules["chunking_evaluation"] = types.ModuleType("chunking_evaluation")
    sys.modules["chunking_evaluation.chunking"] = package
    for name in ("base_chunker", "fixed_token_chunker"):
        spec = importlib.util.spec_from_file_location(
            f"chunking_evaluation.chunking.{name}", os.path.join(chunking, f"{name}.py")
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return module.FixedTokenChunker


def splitter(spec, chroma_class):
    from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter

    kind = spec["kind"]
    if kind == "langchain_recursive":
        settings = dict(
            chunk_size=spec["size"],
            chunk_overlap=spec["overlap"],
            separators=spec["separators"],
            keep_separator=spec["keep_separator"],
        )
        if spec["length"] == "chars":
            return RecursiveCharacterTextSplitter(**settings)
        return RecursiveCharacterTextSplitter.from_tiktoken_encoder(encoding_name=spec["length"], **settings)
    if kind == "chroma_fixed_token":
        if chroma_class is not None:
            return chroma_class(encoding_name=spec["encoding"], chunk_size=spec["size"], chunk_overlap=spec["overlap"])
        return TokenTextSplitter(encoding_name=spec["encoding"], chunk_size=spec["size"], chunk_overlap=spec["overlap"])
    if kind == "llamaindex_sentence":
        import functools

        import tiktoken
        from llama_index.core.node_parser import SentenceSplitter

        return SentenceSplitter(
            chunk_size=spec["size"],
            chunk_overlap=spec["overlap"],
            separator=spec["separator"],
            paragraph_separator=spec["paragraph_separator"],
            tokenizer=functools.partial(tiktoken.get_encoding(spec["encoding"]).encode, allowed_special="all"),
        )
    return None


def aligned_with_repeats(theirs, mine):
    """Whether `theirs` is `mine` with some chunks sent again right after themselves."""
    i = j = 0
    while i < len(theirs):
        if j < len(mine) and theirs[i] == mine[j]:
            i, j = i + 1, j + 1
        elif i > 0 and theirs[i] == theirs[i - 1]:
            i += 1
        else:
            return False
    return j == len(mine)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("documents")
    parser.add_argument("chunks")
    parser.add_argument("--chunking-evaluation", help="a checkout of brandonstarxel/chunking_evaluation")
    args = parser.parse_args()
    offline_tiktoken()
    chroma_class = chroma_fixed_token_class(args.chunking_evaluation) if args.chunking_evaluation else None

    with open(args.documents, encoding="utf-8") as f:
        docs = {d["doc"]: d["text"] for d in map(json.loads, f)}
    ours = {}
    specs = {}
    with open(args.chunks, encoding="utf-8") as f:
        for c in map(json.loads, f):
            specs[c["chunker"]] = c["spec"]
            ours.setdefault(c["chunker"], {}).setdefault(c["doc"], []).append(c["text"])

    failed = False
    for label, spec in specs.items():
        split = splitter(spec, chroma_class)
        if split is None:
            continue
        report = {"chunker": label, "documents": 0, "chunks": 0, "equal": 0, "differ": 0, "cut_inside_a_char": 0, "repeated": 0}
        for doc, text in docs.items():
            theirs = [c for c in split.split_text(text) if c]
            mine = ours[label].get(doc, [])
            report["documents"] += 1
            report["chunks"] += len(theirs)
            if theirs == mine:
                report["equal"] += 1
                continue
            # The same chunk sent twice in a row (LlamaIndex's overlap can re-add pieces that
            # strip then removes): one place, one chunk in ragsweep.
            if aligned_with_repeats(theirs, mine):
                report["repeated"] += 1
                continue
            # A token window cut inside a character: Python decodes the cut bytes as U+FFFD.
            if len(theirs) == len(mine) and all(t == m or "\ufffd" in t for t, m in zip(theirs, mine)):
                report["cut_inside_a_char"] += 1
                continue
            report["differ"] += 1
            if "first_difference" not in report:
                at = next((i for i, (t, m) in enumerate(zip(theirs, mine)) if t != m), min(len(theirs), len(mine)))
                report["first_difference"] = {
                    "doc": doc,
                    "chunk": at,
                    "library": theirs[at] if at < len(theirs) else None,
                    "ragsweep": mine[at] if at < len(mine) else None,
                }
        failed |= report["differ"] > 0
        print(json.dumps(report, ensure_ascii=False))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
