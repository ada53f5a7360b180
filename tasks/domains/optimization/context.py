"""The optimisation domain as the one value an episode evaluation hands down, for code that plays in it without
loading the domain object: a test, a benchmark, a script calling a method directly. ``tasks.domains.domain_context(
"optimization")`` gives the same value. Nothing falls back to it: a ``MethodContext`` is always given its domain."""

from tasks.domain_context import DomainContext
from tasks.domains.optimization.gaps import OPTIMIZATION
from tasks.domains.optimization.vocabulary import OPTIMIZATION_HINTS

OPTIMIZATION_CONTEXT = DomainContext(name="optimization", hints=OPTIMIZATION_HINTS, gaps=OPTIMIZATION)
"""The optimisation domain, OR-Clarify's own: its judge hints and gap inventory (no user aspects)."""
