"""Every model call goes through here: litellm with our persistent call cache, the local providers, embeddings.

Nothing in this package imports litellm, torch or sentence-transformers at import time; each heavy import happens
inside the function that needs it.
"""

import os as _os

# litellm reads these at import: without them it retries downloading its cost map from GitHub (about 7 s offline).
_os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
