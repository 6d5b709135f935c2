"""The team's own knowledge: imported sources, chunking, hybrid search, and what replies cite.

Map of the package (``app`` imports ``memory`` and ``compression``; nothing here is imported by them):

- ``types``: the values passed between the parts (``SourceDocument``, ``DocumentFailure``, ``KnowledgeHit``).
- ``chunking``: a document's Markdown into chunks that follow its headings within a token budget.
- ``vectors``: chunk embeddings (memory's embedder), stored per dialect, nearest-neighbour search.
- ``vector_matrix``: SQLite's in-process matrix of chunk vectors, exact or sign-bit prefiltered.
- ``store``: one document with its chunks and vectors written in one transaction; content hashes.
- ``importer``: ``import_documents`` (added, updated, unchanged, removed, failed) and its ``ImportReport``.
- ``fulltext``: the full-text candidates (SQLite FTS5 trigrams, PostgreSQL full-text), the query read as plain words.
- ``term_frequencies``: how many chunks hold each query term, so a large store's search leaves common ones out.
- ``warm``: ``warm_knowledge``, the matrix and the trigram counts loaded when a server starts (SQLite).
- ``search``: ``search_knowledge``, full-text and vector candidates fused by reciprocal rank; the confidence rule.
- ``readers``: ``read_paths``, files, folders and ZIP archives read into ``SourceDocument``s, each file through
  ``formats`` (Markdown with its front matter, HTML through ``web_html``, PDF text layers, plain text).
- ``web``: ``read_urls``, pages and sitemaps fetched into ``SourceDocument``s, with its parts ``web_fetch`` (HTTP
  within limits, robots.txt via ``web_robots``, same-site redirects), ``web_address`` (internal addresses refused,
  connections pinned to the checked address), ``web_sitemap`` and ``web_html`` (a page's main content as Markdown,
  for HTML files too).
"""
