"""Tables, plots and the HTML page from records (`linalg-io report`), and the line a
run prints.

build       `linalg-io report RESULTS.jsonl... --out DIR`
tables      tables of runs; phases: measured against predicted time per phase
plots       plots of one kernel's runs; scaling: the prediction records of a scan
pairs       ranks x threads side by side; labels: names of runs
html        the self-contained page; provenance: where the records come from
line        the one greppable line of a run (`summary_line`)
"""
