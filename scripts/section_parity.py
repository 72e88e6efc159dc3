#!/usr/bin/env python3
# Scores a cell of a section-unit run with pytrec_eval, from its TREC file (percent-encoded
# ids) and qrels built from a JSON golden set, and prints the largest difference from the
# per-case metrics in per_query.jsonl. Usage: section_parity.py RUN_DIR GOLDEN.json CELL
import json, sys

import pytrec_eval
run_dir, golden_path, cell = sys.argv[1], sys.argv[2], sys.argv[3]
def enc(s):
    out = []
    for ch in s:
        if ch == '%' or ch.isspace():
            out.extend('%%%02X' % b for b in ch.encode())
        else:
            out.append(ch)
    return ''.join(out)
golden = json.load(open(golden_path))
qrels = {}
for c in golden:
    rel = c.get('relevant', [])
    if c.get('answerable', True) is False or not rel:
        continue
    qrels[enc(c['id'])] = {enc(r if isinstance(r, str) else r['id']): (1 if isinstance(r, str) else r.get('grade', 1)) for r in rel}
run = {}
for line in open(f"{run_dir}/runs/{cell}.trec"):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {})[d] = float(s)
measures = {'ndcg_cut_10': 'ndcg@10', 'recall_10': 'recall@10', 'recall_5': 'recall@5', 'ndcg_cut_3': 'ndcg@3', 'map_cut_10': 'ap@10'}
ev = pytrec_eval.RelevanceEvaluator(qrels, set(measures))
res = ev.evaluate(run)
ours = {}
for line in open(f"{run_dir}/per_query.jsonl"):
    r = json.loads(line)
    if r['cell'] == cell and r['answerable']:
        ours[enc(r['case'])] = r['metrics']
worst, n = 0.0, 0
for q, m in ours.items():
    for tm, col in measures.items():
        if col not in m or m[col] is None:
            continue
        theirs = res.get(q, {}).get(tm, 0.0)
        worst = max(worst, abs(theirs - m[col])); n += 1
print(f"{cell}: {len(ours)} cases, {n} values compared, max |ragsweep - pytrec_eval| = {worst:.2e}")
