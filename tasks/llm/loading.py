"""One process-wide lock around every model construction.

transformers builds a model under process-wide patches (meta-device initialisation), so two threads building models
at once, for example a trained policy and the MiniLM embedder in evaluation worker threads, can leave one of them with
meta tensors ("Cannot copy out of meta tensor"). Every place that builds a model holds this lock. It is re-entrant
because a policy load may first convert the GGUF base, which builds a model too.
"""

import threading

MODEL_LOAD_LOCK = threading.RLock()
