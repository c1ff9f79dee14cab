"""What `make` runs, apart from the library that notebooks import.

- `report`: runs notebooks with papermill and writes their HTML reports (`make run`, `make report`);
- `results`: the results pages and the README's table from the executed notebooks (`make results`);
- `book`: the book of the executed notebooks (`make book`);
- `sweep`: a notebook over a grid of parameters on Dask (`make sweep`);
- `store_writer`: runs a notebook from scratch and writes its stored layer (`make store`; the layer is `lib.store`);
- `status`: the stored and cached results computed with code that has changed since (`make status`; `lib.lineage`);
- `api`: the book's API reference, docs/api.md, generated from the docstrings (`python -m lib.make.api`);
- `verify`: one stored stage recomputed alone and compared with its committed entry (`make verify`; `lib.verify`).

A reader of `lib/` finds the science (one package per paper) and its core (cache, store, run, params, glue, ...)
there; these modules import the core, and nothing in the core or in a paper's package imports them.
"""
