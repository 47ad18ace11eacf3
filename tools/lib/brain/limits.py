"""The bounds every request and setting stays within, declared once for the core and every door.

The core checks them (search, grep, get, ask, config); `operations` shows them in
each door's schema and help. docs/reliability.md says why each is what it is.
Pure constants: importing this costs nothing.
"""

from __future__ import annotations

SEARCH_MODES = ("hybrid", "bm25", "vector")  # the values a search's mode takes
MAX_QUERY_CHARS = 2000  # a question is a sentence or a paragraph; 1 MB took 286 s under the folder's lock
# RE2 is linear in the text, but its cost also grows with the pattern: a 100 KB alternation over a
# 10 MB note ran out of RE2's DFA memory and fell back to a slower engine (330 s); 2,000 characters
# of alternation grep 10 MB in well under a second.
MAX_PATTERN_CHARS = 2000
MAX_SEARCH_LIMIT = 200
MIN_EXCERPT_CHARS = 100
# An excerpt is what an agent reads of one hit; 200 of them at this size stay under 10 MB per answer.
MAX_EXCERPT_CHARS = 50_000
DEFAULT_GREP_LIMIT = 50
MAX_GREP_LIMIT = 500
MAX_GREP_CONTEXT = 50
# The most one read returns: about 50,000 words, more than an agent's context should take in one call.
MAX_READ_BYTES = 200_000
MAX_ASK_FILES = 20
MAX_ASK_BUDGET = 100_000
# A chunk of fewer characters than a short paragraph multiplies every teammate's indexing work
# (chunk_chars = 1 made one chunk per character); past this one chunk outgrows any model's window.
MIN_CHUNK_CHARS = 200
MAX_CHUNK_CHARS = 100_000
MAX_CANDIDATES = 10_000  # chunks each half of a hybrid search hands to fusion
